package catalog

// EncodeList renders records as a JSON array that DecodeList reads back:
// each record's canonical bytes on a line of its own, in the order given,
// the array's brackets on lines of their own, and a final newline. It is
// the records file `sourcecatalog commit` and `build` read.
func EncodeList(records []*Record) []byte {
	n := len("[\n]\n")
	for _, r := range records {
		n += len(r.Canonical()) + len(",\n")
	}
	b := make([]byte, 0, n)
	b = append(b, "[\n"...)
	for i, r := range records {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, r.Canonical()...)
	}
	return append(b, "\n]\n"...)
}
