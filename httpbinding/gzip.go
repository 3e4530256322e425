package httpbinding

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// requestGzipLevel is the compress/gzip level of a Client sending with
// WithRequestCompression: gzip.BestCompression. Measured against
// gzip.BestSpeed and gzip.DefaultCompression (BenchmarkRequestGzipLevels;
// one run, 2 shared cores): on the example boat's first snapshot (23,872
// bytes of requests) 4,512 bytes against 5,383 and 4,554, on a typical
// boat's (1,500 records, 250,853 bytes) 19,120 against 22,370 and 19,520,
// for some 10 ms per snapshot at most: boats pay per byte, and a snapshot
// goes every few minutes at most.
const requestGzipLevel = gzip.BestCompression

// requestCoding reads the content coding of a request's body from its
// Content-Encoding field lines (SPEC.md §11.1): none, or one "identity",
// is the body as it is; one "gzip", in any case, is a gzip member. It
// reports ok false for anything else: another coding, an empty value, a
// list of codings, several field lines.
func requestCoding(h http.Header) (gzipped, ok bool) {
	v := h.Values("Content-Encoding")
	switch {
	case len(v) == 0:
		return false, true
	case len(v) > 1:
		return false, false
	}
	switch c := strings.TrimSpace(v[0]); {
	case strings.EqualFold(c, "identity"):
		return false, true
	case strings.EqualFold(c, "gzip"):
		return true, true
	}
	return false, false
}

// errNotGzip is wrapped by gunzip's error for a body that is not exactly
// one valid gzip member. It reaches the Observer only: the sender is
// answered 400 in plain text (SPEC.md §11.1).
var errNotGzip = errors.New("httpbinding: the body is not one valid gzip member")

// gzipReaders holds decompressors for reuse: a gzip.Reader's flate state
// is some 40 KB, allocated once per reader.
var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// bodyBuffers holds buffers of MaxRequestBody+1 bytes for reuse, into
// which a gzip body and its decompressed bytes are read: a request costs
// the bytes of its wrapped request, copied out, and no more.
var bodyBuffers = sync.Pool{New: func() any { return new([MaxRequestBody + 1]byte) }}

// gunzipped, when set (by tests), is told how many decompressed bytes
// each gunzip took out of its decompressor.
var gunzipped atomic.Pointer[func(int)]

// readGzipBody reads a gzip body from body, which must end after at most
// MaxRequestBody bytes (an http.MaxBytesReader), and returns its
// decompressed bytes as gunzip does; a read error, such as the
// *http.MaxBytesError of a body over the cap, is returned as it is.
func readGzipBody(body io.Reader) ([]byte, error) {
	in := bodyBuffers.Get().(*[MaxRequestBody + 1]byte)
	defer bodyBuffers.Put(in)
	n, err := fill(body, in[:])
	switch {
	case err == nil: // a reader that let through more than its bound
		return nil, &http.MaxBytesError{Limit: MaxRequestBody}
	case err != io.EOF:
		return nil, err
	}
	return gunzip(in[:n])
}

// fill reads from r into b until b is full (nil error), r ends (io.EOF)
// or fails, and returns the bytes read and that error.
func fill(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// gunzip returns the decompressed bytes of body, which must be exactly one
// gzip member (RFC 1952): header, deflate stream, CRC-32 and ISIZE
// matching, nothing after it. It takes at most MaxRequestBody+1 bytes out
// of the decompressor: a member that decompresses to more is an
// *http.MaxBytesError, whatever follows. Any other flaw is an error
// wrapping errNotGzip. The result is a new slice the caller owns.
func gunzip(body []byte) ([]byte, error) {
	src := bytes.NewReader(body) // an io.ByteReader: the decompressor reads no byte past the member
	zr := gzipReaders.Get().(*gzip.Reader)
	defer gzipReaders.Put(zr)
	if err := zr.Reset(src); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotGzip, err)
	}
	zr.Multistream(false)
	out := bodyBuffers.Get().(*[MaxRequestBody + 1]byte)
	defer bodyBuffers.Put(out)
	n, err := fill(zr, out[:])
	if hook := gunzipped.Load(); hook != nil {
		(*hook)(n)
	}
	switch {
	case n > MaxRequestBody:
		return nil, &http.MaxBytesError{Limit: MaxRequestBody}
	case err != io.EOF:
		return nil, fmt.Errorf("%w: %v", errNotGzip, err)
	case src.Len() > 0:
		return nil, fmt.Errorf("%w: %d bytes after the member", errNotGzip, src.Len())
	}
	return bytes.Clone(out[:n]), nil
}

// gzipWriters holds compressors at requestGzipLevel for reuse.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, requestGzipLevel) // the level is valid
	return zw
}}

// gzipRequest returns body compressed as one gzip member at
// requestGzipLevel, with no name, comment or time in its header: the same
// body always compresses to the same bytes.
func gzipRequest(body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body)/4 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	_, _ = zw.Write(body) // a bytes.Buffer takes every write
	_ = zw.Close()
	return buf.Bytes()
}
