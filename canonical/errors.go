package canonical

import (
	"errors"
	"strconv"

	"github.com/yachtmemory/sourcecatalog"
)

// Detail sentinels for a *SyntaxError. Each also matches
// sourcecatalog.ErrMalformedJSON under errors.Is.
var (
	ErrSyntax           = errors.New("invalid JSON syntax")
	ErrUnexpectedEnd    = errors.New("unexpected end of input")
	ErrDuplicateName    = errors.New("duplicate object member name")
	ErrInvalidUTF8      = errors.New("invalid UTF-8")
	ErrInvalidSurrogate = errors.New("invalid UTF-16 surrogate escape")
	ErrInvalidNumber    = errors.New("invalid number syntax")
	ErrLossyNumber      = errors.New("number would change its value")
	ErrTooDeep          = errors.New("nesting too deep")
	ErrTrailingData     = errors.New("trailing data after JSON value")
	ErrByteOrderMark    = errors.New("byte-order mark")
)

// ErrInvalidFloat is returned by AppendFloat for NaN and the infinities,
// which have no JSON form. It wraps sourcecatalog.ErrInvalidValue.
var ErrInvalidFloat error = sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "NaN or infinity cannot be encoded")

// A SyntaxError reports input that is not strict JSON. Offset is the byte
// offset in the input at which the problem was found.
type SyntaxError struct {
	Offset int64
	Err    error // one of the detail sentinels
}

func (e *SyntaxError) Error() string {
	return "canonical: " + e.Err.Error() + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// Unwrap returns sourcecatalog.ErrMalformedJSON and the detail sentinel.
func (e *SyntaxError) Unwrap() []error {
	return []error{sourcecatalog.ErrMalformedJSON, e.Err}
}

func syntaxErr(off int, err error) error {
	return &SyntaxError{Offset: int64(off), Err: err}
}
