// Package canonical implements the JSON Canonicalization Scheme of RFC 8785
// (JCS) for the Source Catalog protocol, with the stricter input rules the
// protocol requires.
//
// [Transform] turns arbitrary JSON text (RFC 8259) into its canonical bytes:
// UTF-8, no insignificant whitespace, object members sorted by the UTF-16 code
// units of their names, numbers in ECMAScript shortest form, strings with
// minimal escaping. [Parse] returns the same input as a [Value] tree whose
// AppendCanonical method writes those bytes. The Append functions encode the
// module's own typed values directly, without a detour through encoding/json.
// [IsCanonical] recognises text that is canonical already, as every message
// this module writes is, in one pass and without allocating; Transform
// starts with that check and then only copies. The module's decoders read
// the canonical bytes Transform returns, never a Value tree.
//
// # Strictness
//
// Everything RFC 8785 leaves to I-JSON (RFC 7493) is an error here, and so is
// any input whose meaning would silently change on the way through:
//
//   - duplicate member names, also when one is spelled with escapes;
//   - invalid UTF-8, lone or reversed UTF-16 surrogates in \u escapes;
//   - a byte-order mark, trailing content after the value, nesting deeper
//     than [sourcecatalog.MaxDepth] arrays and objects;
//   - number syntax outside RFC 8259: NaN, Infinity, leading zeros, "+1",
//     ".5", "1.", hexadecimal;
//   - numbers that do not survive as IEEE-754 doubles: overflow ("1e400"), a
//     non-zero literal that underflows to zero ("1e-400"), and an integer
//     literal (digits only) whose value differs from the value of its own
//     canonical form ("9007199254740993" would print as
//     "9007199254740992"). Literals with a fraction or an exponent are read
//     as doubles, as RFC 8785 says, and "-0" becomes "0".
//
// Every rejection is a [*SyntaxError] that carries the byte offset and wraps
// both [sourcecatalog.ErrMalformedJSON] and one of this package's detail
// sentinels. Canonical output always parses again to the same bytes.
//
// # Security considerations
//
// Parse and Transform run in time and memory linear in the input. Transform
// allocates about one copy of its output; a Parse tree adds 16 bytes a
// value. Depth is bounded, so recursion is too. Error texts never quote the input; they give
// the offset instead. Callers should still bound the input size before
// calling: nothing here limits it.
package canonical
