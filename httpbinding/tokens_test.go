package httpbinding_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

func TestParseTokens(t *testing.T) {
	hashA := strings.Fields(httpbinding.TokenHash("a", vesselA))[0]
	hashB := strings.Fields(httpbinding.TokenHash("b", vesselA))[0]
	a, b := vesselA.String(), vesselB.String()
	cases := []struct {
		name  string
		file  string
		n     int    // entries, when valid
		class error  // when invalid
		line  string // the line the error names
	}{
		{"two entries", hashA + " " + a + "\n" + hashB + " " + b + "\n", 2, nil, ""},
		{"comments, blank lines, no final newline", "# tokens\n\n" + hashA + " " + a + "\n  \n" + hashB + " " + a, 2, nil, ""},
		{"empty file", "", 0, nil, ""},
		{"duplicate hash", hashA + " " + a + "\n" + hashA + " " + b + "\n", 0, sourcecatalog.ErrInvalidValue, "line 2: the hash of line 1"},
		{"uppercase hash", strings.ToUpper(hashA) + " " + a, 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"short hash", hashA[:63] + " " + a, 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"not hex", "g" + hashA[1:] + " " + a, 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"uppercase uuid", hashA + " " + strings.ToUpper(a), 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"nil uuid", hashA + " 00000000-0000-0000-0000-000000000000", 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"no vessel", hashA, 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"third field", hashA + " " + a + " extra", 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"two spaces", hashA + "  " + a, 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"tab", hashA + "\t" + a, 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"CRLF line ends", hashA + " " + a + "\r\n" + hashB + " " + a + "\r\n", 2, nil, ""},
		{"CR inside", hashA + " " + a + "\r \n", 0, sourcecatalog.ErrInvalidValue, "line 1"},
		{"too large", strings.Repeat("#\n", httpbinding.MaxTokenFile), 0, sourcecatalog.ErrLimitExceeded, "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tokens, err := httpbinding.ParseTokens(strings.NewReader(tc.file))
			if tc.class != nil {
				require.ErrorIs(t, err, tc.class)
				assert.Contains(t, err.Error(), tc.line)
				assert.Nil(t, tokens)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.n, tokens.Len())
		})
	}
}

// Every entry of a vessel with several tokens authenticates it.
func TestTokensRotation(t *testing.T) {
	file := httpbinding.TokenHash("old", vesselA) + "\n" + httpbinding.TokenHash("new", vesselA) + "\n" + httpbinding.TokenHash("other", vesselB) + "\n"
	tokens, err := httpbinding.ParseTokens(strings.NewReader(file))
	require.NoError(t, err)
	for token, want := range map[string]any{"old": vesselA, "new": vesselA, "other": vesselB, "none": httpbinding.ErrBadCredentials} {
		req := httptest.NewRequest(http.MethodPost, "https://receiver/", nil)
		req.TLS = &tls.ConnectionState{}
		req.Header.Set("Authorization", "Bearer "+token)
		o, err := tokens.Authenticate(req)
		if e, ok := want.(error); ok {
			require.ErrorIs(t, err, e, token)
			continue
		}
		require.NoError(t, err, token)
		assert.Equal(t, want, o.VesselID, token)
	}
}

// The errors of the package wrap exactly one class each.
func TestErrorsAreClassed(t *testing.T) {
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash("tok", vesselA)))
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "https://receiver/", nil)
	req.TLS = &tls.ConnectionState{}
	_, none := tokens.Authenticate(req)
	req.Header.Set("Authorization", "Bearer other")
	_, bad := tokens.Authenticate(req)
	_, noCert := httpbinding.MutualTLS{}.Authenticate(req)
	for _, c := range []struct {
		err, is, class error
	}{
		{none, httpbinding.ErrNoCredentials, sourcecatalog.ErrInvalidValue},
		{noCert, httpbinding.ErrNoCredentials, sourcecatalog.ErrInvalidValue},
		{bad, httpbinding.ErrBadCredentials, sourcecatalog.ErrInvalidValue},
		{httpbinding.ErrUnauthorized, httpbinding.ErrUnauthorized, sourcecatalog.ErrStoreUnavailable},
	} {
		require.ErrorIs(t, c.err, c.is)
		assert.Equal(t, c.class, sourcecatalog.Class(c.err), "%v", c.err)
		for _, other := range sourcecatalog.Classes() {
			if other != c.class {
				assert.NotErrorIs(t, c.err, other, "%v", c.err)
			}
		}
	}
}
