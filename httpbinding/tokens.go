package httpbinding

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Bounds of a token file and of a presented token.
const (
	MaxTokenFile  = 1 << 20 // bytes of a token file
	MaxTokens     = 10000   // entries of a token file
	MaxTokenBytes = 512     // bytes of a bearer token
)

// Tokens authenticates a request by its bearer token (RFC 6750): the
// SHA-256 of the token names the vessel. The server keeps only the hashes.
// A presented token is compared in constant time with every entry, so the
// time taken tells nothing of which entry, if any, is near.
//
// A request without TLS is refused (ErrBadCredentials): a token sent in
// clear is to be taken as leaked.
type Tokens struct {
	hashes  [][sha256.Size]byte
	vessels []uuid.UUID
}

var (
	_ Authenticator = (*Tokens)(nil)
	_ Challenger    = (*Tokens)(nil)
)

// ParseTokens reads a token file: one entry a line, "<sha256-hex> <vessel>",
// the SHA-256 of the token in 64 lowercase hex digits, one space, and the
// vessel's UUID in canonical lowercase form; lines end in LF or CRLF.
// Blank lines and lines starting with "#" are ignored; a vessel may have
// several tokens (rotation). The file is at most MaxTokenFile bytes and
// MaxTokens entries.
//
// Every problem in the file is an error wrapping
// sourcecatalog.ErrInvalidValue (or ErrLimitExceeded for the bounds) that
// names the line: another number of fields, a hash that is not 64
// lowercase hex digits, a vessel id that is not a canonical UUID, a hash
// listed twice. No entry is ever skipped. An error reading r wraps
// sourcecatalog.ErrStoreUnavailable.
func ParseTokens(r io.Reader) (*Tokens, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTokenFile+1))
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
	}
	if len(data) > MaxTokenFile {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, fmt.Sprintf("token file larger than %d bytes", MaxTokenFile))
	}
	t := &Tokens{}
	seen := make(map[[sha256.Size]byte]int)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxTokenFile)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		h, v, err := parseTokenLine(line)
		if err != nil {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("token file line %d: %s", n, err))
		}
		if first, dup := seen[h]; dup {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("token file line %d: the hash of line %d again", n, first))
		}
		if len(t.hashes) == MaxTokens {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, fmt.Sprintf("token file line %d: more than %d entries", n, MaxTokens))
		}
		seen[h] = n
		t.hashes, t.vessels = append(t.hashes, h), append(t.vessels, v)
	}
	if err := sc.Err(); err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrInvalidValue, err)
	}
	return t, nil
}

// parseTokenLine parses "<64 lowercase hex> <uuid>".
func parseTokenLine(line string) (h [sha256.Size]byte, v uuid.UUID, err error) {
	hexHash, id, ok := strings.Cut(line, " ")
	if !ok || strings.ContainsAny(id, " \t\r") || strings.ContainsAny(hexHash, "\t\r") {
		return h, v, fmt.Errorf("want \"<sha256-hex> <vessel-uuid>\" separated by one space")
	}
	if len(hexHash) != 2*sha256.Size || strings.ToLower(hexHash) != hexHash {
		return h, v, fmt.Errorf("the hash must be 64 lowercase hex digits")
	}
	if _, err := hex.Decode(h[:], []byte(hexHash)); err != nil {
		return h, v, fmt.Errorf("the hash must be 64 lowercase hex digits")
	}
	if v, err = envelope.ParseUUID(id); err != nil {
		return h, v, fmt.Errorf("the vessel id must be a canonical lowercase UUID")
	}
	return h, v, nil
}

// LoadTokens reads the token file at path with ParseTokens.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrInvalidValue, err)
	}
	defer f.Close()
	return ParseTokens(f)
}

// TokenHash returns the line a token file lists for token and vessel: the
// operator's tool to make one.
func TokenHash(token string, vessel uuid.UUID) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:]) + " " + vessel.String()
}

// Len returns the number of entries.
func (t *Tokens) Len() int { return len(t.hashes) }

// Authenticate implements Authenticator: "Authorization: Bearer <token>",
// the scheme in any case, the token 1 to MaxTokenBytes bytes of RFC 6750's
// b64token characters.
func (t *Tokens) Authenticate(r *http.Request) (finalize.Origin, error) {
	auth := r.Header.Values("Authorization")
	if len(auth) == 0 {
		return finalize.Origin{}, ErrNoCredentials
	}
	if r.TLS == nil {
		return finalize.Origin{}, errCredentialsInClear
	}
	scheme, token, ok := strings.Cut(auth[0], " ")
	if len(auth) != 1 || !ok || !strings.EqualFold(scheme, "Bearer") || !isB64Token(token) {
		return finalize.Origin{}, badCredentials("not one Authorization: Bearer <token>")
	}
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.hashes {
		if subtle.ConstantTimeCompare(sum[:], t.hashes[i][:]) == 1 {
			match = i // no early exit: every entry is compared
		}
	}
	if match < 0 {
		return finalize.Origin{}, badCredentials("unknown bearer token")
	}
	return finalize.Origin{VesselID: t.vessels[match]}, nil
}

// The challenges of a 401 (RFC 6750 §3): without a token, and refusing
// one.
const (
	challengeBearer       = `Bearer realm="sourcecatalog"`
	challengeInvalidToken = `Bearer realm="sourcecatalog", error="invalid_token"`
)

// errCredentialsInClear refuses credentials sent without TLS.
var errCredentialsInClear = badCredentials("credentials over a connection without TLS")

// Challenge implements Challenger (RFC 6750 §3).
func (t *Tokens) Challenge(err error) string {
	if errors.Is(err, ErrNoCredentials) {
		return challengeBearer
	}
	return challengeInvalidToken
}

// isB64Token reports whether s is 1 to MaxTokenBytes characters of RFC
// 6750's b64token: ALPHA DIGIT - . _ ~ + / followed by any "=".
func isB64Token(s string) bool {
	if len(s) == 0 || len(s) > MaxTokenBytes {
		return false
	}
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~+/", c) >= 0:
		default:
			return false
		}
	}
	return true
}
