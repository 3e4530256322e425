package mysqlstore

import (
	"encoding/binary"
	"errors"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// The record index is stored as one blob: a uvarint entry count, then per
// entry the kind byte, the uvarint-prefixed path and source_ref, and the
// 32-byte record digest.

func encodeIndex(index []finalize.IndexEntry) []byte {
	size := binary.MaxVarintLen64
	for _, e := range index {
		size += 1 + 2*binary.MaxVarintLen64 + len(e.Key.Path) + len(e.Key.SourceRef) + len(e.Digest)
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(index)))
	for _, e := range index {
		b = append(b, byte(e.Key.Kind))
		b = binary.AppendUvarint(b, uint64(len(e.Key.Path)))
		b = append(b, e.Key.Path...)
		b = binary.AppendUvarint(b, uint64(len(e.Key.SourceRef)))
		b = append(b, e.Key.SourceRef...)
		b = append(b, e.Digest[:]...)
	}
	return b
}

var errCorruptIndex = errors.New("mysqlstore: corrupt record index")

func decodeIndex(b []byte) ([]finalize.IndexEntry, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errCorruptIndex
	}
	b = b[k:]
	out := make([]finalize.IndexEntry, n)
	str := func() (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(l)])
		b = b[k+int(l):]
		return s, true
	}
	for i := range out {
		if len(b) < 1 {
			return nil, errCorruptIndex
		}
		e := &out[i]
		e.Key.Kind = catalog.Kind(b[0])
		b = b[1:]
		var ok1, ok2 bool
		e.Key.Path, ok1 = str()
		e.Key.SourceRef, ok2 = str()
		if !ok1 || !ok2 || len(b) < len(e.Digest) {
			return nil, errCorruptIndex
		}
		copy(e.Digest[:], b)
		b = b[len(e.Digest):]
	}
	if len(b) != 0 {
		return nil, errCorruptIndex
	}
	return out, nil
}
