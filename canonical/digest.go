package canonical

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/yachtmemory/sourcecatalog"
)

// A Digest is the SHA-256 of canonical bytes. Its text form, used on the
// wire, is 64 lowercase hexadecimal digits.
type Digest [sha256.Size]byte

// Sum returns the Digest of b.
func Sum(b []byte) Digest { return sha256.Sum256(b) }

// String returns the 64 lowercase hex digits of d.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// AppendHex appends the 64 lowercase hex digits of d to dst.
func (d Digest) AppendHex(dst []byte) []byte { return hex.AppendEncode(dst, d[:]) }

// ParseDigest parses 64 lowercase hex digits. Anything else — upper case,
// another length — is an error wrapping sourcecatalog.ErrInvalidValue.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "digest must be 64 lowercase hex digits")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return d, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "digest must be 64 lowercase hex digits")
		}
	}
	hex.Decode(d[:], []byte(s))
	return d, nil
}
