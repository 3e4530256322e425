// Package files is the on-disk form of a snapshot shared by the
// sourcecatalog command and the examples generator: a header file holding
// the manifest and a chunks file holding a JSON array of the chunks.
//
// # Format
//
// The header file is the manifest's canonical bytes followed by one newline.
// The chunks file is "[\n", the canonical bytes of each chunk in index order
// joined by ",\n", then "\n]\n": one chunk per line, each line the exact
// bytes of one outbox payload, and the whole file still one valid JSON text
// that any language can read. The line breaks sit between values, where
// JSON allows whitespace, so hashes are unaffected by them.
//
// Readers ([Decode]) are lenient about layout and strict about content: the
// chunks may appear in any order and with any JSON whitespace or member
// order, and each one is decoded and verified by package envelope, within
// its bound on the size of a message (envelope.MaxMessageSize, whitespace
// included).
package files

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// The file names the sourcecatalog command writes.
const (
	HeaderName = "header.json"
	ChunksName = "chunks.json"
)

// MaxFileSize bounds every file the readers accept. A complete snapshot in
// the canonical layout is below 9 MiB even with every request at its limit;
// the bound leaves room for pretty-printed input.
const MaxFileSize = 64 << 20

// Header returns the header file of s: the manifest's canonical bytes and a
// newline.
func Header(s *envelope.Snapshot) []byte {
	return append(s.Manifest.Canonical(), '\n')
}

// Chunks returns the chunks file of s: a JSON array with one chunk's
// canonical bytes per line, in index order.
func Chunks(s *envelope.Snapshot) []byte {
	n := 4
	for _, c := range s.Chunks {
		n += len(c.Canonical()) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, "[\n"...)
	for i, c := range s.Chunks {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, c.Canonical()...)
	}
	return append(b, "\n]\n"...)
}

// ErrTooLarge is returned by ReadAll and ReadFile for input over
// MaxFileSize bytes. It wraps sourcecatalog.ErrLimitExceeded.
var ErrTooLarge = fmt.Errorf("input larger than %d bytes: %w", MaxFileSize, sourcecatalog.ErrLimitExceeded)

// ReadAll reads r to the end, failing with ErrTooLarge beyond MaxFileSize
// bytes.
func ReadAll(r io.Reader) ([]byte, error) { return readAll(r, MaxFileSize) }

func readAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrTooLarge
	}
	return b, nil
}

// ReadFile reads the named file with the bound of ReadAll.
func ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// Decode decodes and verifies a header file and a chunks file (see the
// package documentation for the leniency). It returns the snapshot with its
// chunks in index order, or an error joining one *sourcecatalog.Error per
// problem found; sourcecatalog.Problems lists them. Problems of a chunk
// that could not be decoded say "chunks[i]", its position in the file's
// array. A chunks file of more than sourcecatalog.MaxChunks elements is
// refused without decoding them.
func Decode(header, chunks []byte) (*envelope.Snapshot, error) {
	elems, err := SplitArray(chunks, sourcecatalog.MaxChunks)
	if err != nil {
		var e *sourcecatalog.Error
		if !errors.As(err, &e) {
			e = sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
			e.Detail = "the chunks file must hold a JSON array"
		}
		problems := []error{e.AtField("chunks")}
		if _, err := envelope.DecodeManifest(header); err != nil {
			problems = append(problems, err)
		}
		return nil, errors.Join(problems...)
	}
	// Each element goes to the decoder as it is written: the decoder
	// refuses one over its size bound before parsing it.
	return envelope.DecodeSnapshot(header, elems)
}

// SplitArray returns the raw text of each element of the JSON array src,
// which may hold at most limit elements. It checks only the array's own
// syntax, and that brackets balance outside strings; each element must
// still be parsed. It does not parse src as a whole, so the elements keep
// the full canonical.Parse nesting budget: a chunk may nest
// sourcecatalog.MaxDepth levels deep, and the array around it would make one
// more.
//
// Syntax errors are a *canonical.SyntaxError, possibly wrapped; more than
// limit elements is a *sourcecatalog.Error wrapping ErrLimitExceeded.
func SplitArray(src []byte, limit int) ([][]byte, error) {
	if bytes.HasPrefix(src, []byte("\xEF\xBB\xBF")) {
		return nil, &canonical.SyntaxError{Offset: 0, Err: canonical.ErrByteOrderMark}
	}
	i := skipSpace(src, 0)
	if i >= len(src) || src[i] != '[' {
		return nil, syntaxErr(i, src, "expected '['")
	}
	i = skipSpace(src, i+1)
	var elems [][]byte
	if i < len(src) && src[i] == ']' {
		return rest(src, i+1, [][]byte{})
	}
	for {
		start := i
		end, err := scanValue(src, i)
		if err != nil {
			return nil, err
		}
		if len(elems) == limit {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than "+strconv.Itoa(limit)+" elements")
		}
		elems = append(elems, bytes.TrimRight(src[start:end], " \t\r\n"))
		i = end
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case ']':
			return rest(src, i+1, elems)
		}
	}
}

// scanValue returns the offset of the ',' or ']' that ends the array
// element starting at i.
func scanValue(src []byte, i int) (int, error) {
	depth := 0
	start := i
	for ; i < len(src); i++ {
		switch src[i] {
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
			if i >= len(src) {
				return 0, syntaxErr(len(src), src, "unterminated string")
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				if src[i] == '}' {
					return 0, syntaxErr(i, src, "unbalanced '}'")
				}
				if i == start {
					return 0, syntaxErr(i, src, "missing array element")
				}
				return i, nil
			}
			depth--
		case ',':
			if depth == 0 {
				if i == start {
					return 0, syntaxErr(i, src, "missing array element")
				}
				return i, nil
			}
		}
	}
	return 0, syntaxErr(len(src), src, "unterminated array")
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

func rest(src []byte, i int, elems [][]byte) ([][]byte, error) {
	if i = skipSpace(src, i); i < len(src) {
		return nil, &canonical.SyntaxError{Offset: int64(i), Err: canonical.ErrTrailingData}
	}
	return elems, nil
}

func syntaxErr(i int, src []byte, what string) error {
	sentinel := canonical.ErrSyntax
	if i >= len(src) {
		sentinel = canonical.ErrUnexpectedEnd
	}
	return fmt.Errorf("%s: %w", what, &canonical.SyntaxError{Offset: int64(i), Err: sentinel})
}
