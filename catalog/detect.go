package catalog

import (
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// DetectValueType returns the value type of a sample value given as JSON
// text. An empty sample (no value observed yet) is Unknown. An object is a
// Position only when its members are exactly latitude and longitude, and
// optionally altitude, all numbers; any other object is an Object — type
// detection never assumes that objects are positions. Malformed JSON is an
// error wrapping sourcecatalog.ErrMalformedJSON.
func DetectValueType(sample []byte) (ValueType, error) {
	if len(sample) == 0 {
		return Unknown, nil
	}
	v, err := canonical.Parse(sample)
	if err != nil {
		return 0, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	return ValueTypeOf(&v), nil
}

// ValueTypeOf returns the value type of a parsed sample value, by the rules
// of DetectValueType.
func ValueTypeOf(v *canonical.Value) ValueType {
	switch v.Kind() {
	case canonical.KindNull:
		return Null
	case canonical.KindBool:
		return Boolean
	case canonical.KindNumber:
		return Number
	case canonical.KindString:
		return String
	case canonical.KindArray:
		return Array
	case canonical.KindObject:
		if isPosition(v.Members()) {
			return Position
		}
		return Object
	}
	return Unknown
}

func isPosition(mems []canonical.Member) bool {
	// Members are sorted: altitude < latitude < longitude.
	switch len(mems) {
	case 2:
		return mems[0].Name == "latitude" && mems[1].Name == "longitude" &&
			allNumbers(mems)
	case 3:
		return mems[0].Name == "altitude" && mems[1].Name == "latitude" &&
			mems[2].Name == "longitude" && allNumbers(mems)
	}
	return false
}

func allNumbers(mems []canonical.Member) bool {
	for i := range mems {
		if mems[i].Value.Kind() != canonical.KindNumber {
			return false
		}
	}
	return true
}
