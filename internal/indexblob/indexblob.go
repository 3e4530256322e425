// Package indexblob encodes a vessel's record index (finalize.Tx.Index) as
// a blob, for the stores that keep it as values: the whole index, or a
// base and a delta from it (Delta, Apply), decoded values cached under a
// stamp (Cache).
//
// The blob is front-coded because neighbouring keys in canonical order
// share long prefixes: a uvarint entry count, then per entry the kind byte,
// for path and source_ref each the uvarint length shared with the previous
// entry's, the uvarint length of the rest and the rest, and the 32-byte
// record digest.
package indexblob

import (
	"encoding/binary"
	"errors"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Encode returns the blob of index.
func Encode(index []finalize.IndexEntry) []byte {
	b := make([]byte, 0, 64+len(index)*48)
	b = binary.AppendUvarint(b, uint64(len(index)))
	var prevPath, prevRef string
	for _, e := range index {
		b = append(b, byte(e.Key.Kind))
		b = appendFront(b, prevPath, e.Key.Path)
		b = appendFront(b, prevRef, e.Key.SourceRef)
		b = append(b, e.Digest[:]...)
		prevPath, prevRef = e.Key.Path, e.Key.SourceRef
	}
	return b
}

func appendFront(b []byte, prev, s string) []byte {
	shared := 0
	for shared < len(prev) && shared < len(s) && prev[shared] == s[shared] {
		shared++
	}
	b = binary.AppendUvarint(b, uint64(shared))
	b = binary.AppendUvarint(b, uint64(len(s)-shared))
	return append(b, s[shared:]...)
}

// ErrCorrupt is returned by Decode for a blob that Encode did not make.
var ErrCorrupt = errors.New("corrupt record index")

type indexReader struct {
	b   []byte
	bad bool
}

func (r *indexReader) uvarint() uint64 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}

// front reads a front-coded string following prev.
func (r *indexReader) front(prev string) string {
	shared, rest := r.uvarint(), r.uvarint()
	if r.bad || shared > uint64(len(prev)) || rest > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	if rest == 0 {
		return prev[:shared]
	}
	s := prev[:shared] + string(r.b[:rest])
	r.b = r.b[rest:]
	return s
}

// Decode returns the index encoded in blob, or ErrCorrupt. A blob of an
// empty index decodes to an empty, non-nil slice.
func Decode(blob []byte) ([]finalize.IndexEntry, error) {
	r := &indexReader{b: blob}
	n := r.uvarint()
	if r.bad || n > uint64(len(blob)) {
		return nil, ErrCorrupt
	}
	out := make([]finalize.IndexEntry, n)
	var prevPath, prevRef string
	for i := range out {
		if len(r.b) < 1 {
			return nil, ErrCorrupt
		}
		e := &out[i]
		e.Key.Kind = catalog.Kind(r.b[0])
		r.b = r.b[1:]
		e.Key.Path = r.front(prevPath)
		e.Key.SourceRef = r.front(prevRef)
		if r.bad || len(r.b) < len(e.Digest) {
			return nil, ErrCorrupt
		}
		copy(e.Digest[:], r.b)
		r.b = r.b[len(e.Digest):]
		prevPath, prevRef = e.Key.Path, e.Key.SourceRef
	}
	if len(r.b) != 0 {
		return nil, ErrCorrupt
	}
	return out, nil
}
