//go:build goexperiment.jsonv2

package canonical_test

import (
	"bytes"
	"encoding/json/jsontext"
)

func init() {
	jsontextCanonicalize = func(in []byte) ([]byte, error) {
		v := jsontext.Value(bytes.Clone(in)) // Canonicalize works in place
		err := v.Canonicalize()
		return v, err
	}
}
