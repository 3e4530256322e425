package httpbinding

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
)

// readGzipBody refuses a body longer than the cap whatever its reader,
// and passes a read error on as it is.
func TestReadGzipBodyBounds(t *testing.T) {
	cut := errors.New("cut")
	for _, tc := range []struct {
		name string
		body io.Reader
		want func(error) bool
	}{
		{"one byte over, unbounded reader", bytes.NewReader(make([]byte, MaxRequestBody+1)), func(err error) bool {
			var tooLarge *http.MaxBytesError
			return errors.As(err, &tooLarge)
		}},
		{"a read error", io.MultiReader(bytes.NewReader([]byte{0x1f}), &failReader{cut}), func(err error) bool { return errors.Is(err, cut) }},
		{"empty", bytes.NewReader(nil), func(err error) bool { return errors.Is(err, errNotGzip) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readGzipBody(tc.body)
			if got != nil || !tc.want(err) {
				t.Fatalf("readGzipBody = %q, %v", got, err)
			}
		})
	}
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }
