package catalog_test

import (
	"errors"
	"fmt"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Build one path, its source and the observation that links them, put them
// in canonical global order, check the integrity rules and print the
// canonical bytes that go into a chunk.
func Example() {
	path, err := catalog.NewPath(catalog.Path{
		Path: "navigation.speedOverGround",
		Unit: catalog.UnitOf("m/s"),
		// Any JSON object; it is canonicalised (members sorted, numbers
		// in ECMAScript form).
		Meta: []byte(`{"description": "Speed over ground", "displayScale": {"upper": 1.5E1, "lower": 0.0}}`),
	})
	if err != nil {
		panic(err)
	}

	label, typ := "can0", "NMEA2000"
	source, err := catalog.NewSource(catalog.Source{
		SourceRef: "can0.c0788c00e7e04312", // opaque: never split on dots
		Label:     &label,
		Type:      &typ,
	})
	if err != nil {
		panic(err)
	}

	vt, err := catalog.DetectValueType([]byte(`3.85`))
	if err != nil {
		panic(err)
	}
	obs, err := catalog.NewObservation(catalog.Observation{
		Path:      "navigation.speedOverGround",
		SourceRef: "can0.c0788c00e7e04312",
		ValueType: vt,
	})
	if err != nil {
		panic(err)
	}

	records := []*catalog.Record{obs, source, path}
	fmt.Println("sorted:", catalog.IsSorted(records))
	catalog.Sort(records)
	fmt.Println("sorted:", catalog.IsSorted(records))
	fmt.Println("check:", catalog.Check(records))
	for _, r := range records {
		fmt.Printf("%s\n", r.Canonical())
	}
	// Output:
	// sorted: false
	// sorted: true
	// check: <nil>
	// {"kind":"path","meta":{"description":"Speed over ground","displayScale":{"lower":0,"upper":15}},"path":"navigation.speedOverGround","unit":"m/s"}
	// {"kind":"source","label":"can0","source_ref":"can0.c0788c00e7e04312","type":"NMEA2000"}
	// {"kind":"observation","path":"navigation.speedOverGround","source_ref":"can0.c0788c00e7e04312","value_type":"number"}
}

// The unit of a path is tri-state: absent (unknown), null (no unit) or a
// symbol.
func ExampleUnit() {
	for _, in := range []string{
		`{"kind":"path","path":"navigation.speedOverGround"}`,
		`{"kind":"path","path":"navigation.state","unit":null}`,
		`{"unit":"m/s","path":"navigation.speedThroughWater","kind":"path"}`,
	} {
		r, err := catalog.Decode([]byte(in))
		if err != nil {
			panic(err)
		}
		p, _ := r.AsPath()
		fmt.Printf("%-8s unknown=%-5t none=%-5t %s\n", p.Unit, p.Unit.IsUnknown(), p.Unit.IsNone(), r.Canonical())
	}
	// Output:
	// (absent) unknown=true  none=false {"kind":"path","path":"navigation.speedOverGround"}
	// null     unknown=false none=true  {"kind":"path","path":"navigation.state","unit":null}
	// m/s      unknown=false none=false {"kind":"path","path":"navigation.speedThroughWater","unit":"m/s"}
}

// Check reports every integrity problem with the index of the record.
func ExampleCheck() {
	records, err := catalog.DecodeList([]byte(`[
		{"kind":"path","path":"a"},
		{"kind":"path","path":"b"},
		{"kind":"source","source_ref":"x"},
		{"kind":"source","source_ref":"y"},
		{"kind":"observation","path":"a","source_ref":"x","value_type":"number"}
	]`))
	if err != nil {
		panic(err)
	}
	err = catalog.Check(records)
	fmt.Println(errors.Is(err, sourcecatalog.ErrIntegrity))
	fmt.Println(err)
	// Output:
	// true
	// sourcecatalog: record 1 field "path": integrity violation: path has no observation
	// sourcecatalog: record 3 field "source_ref": integrity violation: source not referenced by any observation
}

// Decoding errors name the field and, in a list, the record.
func ExampleDecodeList() {
	_, err := catalog.DecodeList([]byte(`[
		{"kind":"path","path":"navigation.speedOverGround"},
		{"kind":"path","path":"navigation..speedOverGround"}
	]`))
	var e *sourcecatalog.Error
	if errors.As(err, &e) {
		fmt.Println(e.Record, e.Field, errors.Is(err, sourcecatalog.ErrInvalidValue))
	}
	fmt.Println(err)
	// Output:
	// 1 path true
	// sourcecatalog: record 1 field "path": invalid value: empty path segment
}
