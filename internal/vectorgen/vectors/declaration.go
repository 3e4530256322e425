package vectors

import (
	"fmt"
	"strings"

	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// firstDeclaration is the number of the first declaration vector: the
// numbers 324–329 are left free, and 350 on belong to later groups.
const firstDeclaration = 330

// The declaration of SPEC.md §11.7's example, byte for byte.
const specDeclaration = `{"capabilities":["chunk_reference","request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`

// declarationVectors are the capability declarations of SPEC.md §11.7.
func declarationVectors() ([]vector, error) {
	d, err := parseObject([]byte(specDeclaration))
	if err != nil {
		return nil, err
	}
	at := func(field string) string { return "chunk=- record=- field=" + field }
	okD := func(name string, o object) vector { return ok(apiDeclaration, name, o.compact()) }
	badD := func(name string, o object, class string, where ...string) vector {
		return fail(apiDeclaration, name, o.compact(), class).at(where...)
	}
	withD := d.with
	v2 := `["yachtmemory.source-catalog.v2"]`
	malformed := strings.TrimSuffix(d.compact(), "}") + ",}"
	dup := `{"protocols":["x"],` + d.compact()[1:]
	padded := d.reversed().indent("") + "\n"
	long := strings.Repeat("z", httpbinding.MaxDeclaredName)
	var many []string
	for i := range httpbinding.MaxCapabilities + 1 {
		many = append(many, fmt.Sprintf(`"c%02d"`, i))
	}

	return []vector{
		canonicalOK(apiDeclaration, "v2-no-capability", `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v2"]}`).
			note("protocol v2 and no optional capability: what a receiver declares by default"),
		canonicalOK(apiDeclaration, "both-capabilities", specDeclaration).
			note("the declaration of SPEC.md 11.7, byte for byte"),
		okD("unknown-names-kept", withD("capabilities", `["chunk_reference","x-"`+`,"`+long+`"]`).
			with("protocols", `["yachtmemory.source-catalog.v1","yachtmemory.source-catalog.v2"]`)).
			note("unknown capability names are kept as unknown and never acted on; a 64-byte name is within bounds; another protocol beside v2 is no problem"),
		ok(apiDeclaration, "pretty-reordered", padded).
			note("member order and whitespace are free; the canonical bytes are those of declaration-both-capabilities"),
		okD("other-protocol-only", withD("protocols", `["yachtmemory.source-catalog.v3"]`)).
			note("a declaration that decodes but names no yachtmemory.source-catalog.v2 declares no v2 support: the gate stays off"),
		ok(apiDeclaration, "padded-4096-bytes", padTo(padded, httpbinding.MaxDeclarationSize)).
			note("exactly 4,096 bytes of text, most of them trailing spaces, is within the limit"),

		fail(apiDeclaration, "text-4097-bytes", padTo(padded, httpbinding.MaxDeclarationSize+1), "limit-exceeded").at("none").
			note("the limit is on the text as received, before parsing"),
		fail(apiDeclaration, "malformed", malformed, "malformed-json").at("none").syntax("syntax", len(malformed)-1),
		fail(apiDeclaration, "duplicate-member", dup, "malformed-json").at("none").
			syntax("duplicate-name", strings.LastIndex(dup, `"protocols"`)),
		fail(apiDeclaration, "not-an-object", `["yachtmemory.source-catalog.v2"]`, "invalid-value").at("none"),
		badD("unknown-member", withD("extensions", "{}"), "unknown-field", at("extensions")).
			note("a member this revision does not define is refused, not skipped"),
		badD("protocols-missing", d.without("protocols"), "missing-field", at("protocols")),
		badD("capabilities-not-an-array", withD("capabilities", `"request_gzip"`), "invalid-value", at("capabilities")),
		badD("name-not-a-string", withD("capabilities", `[1]`).with("protocols", `[]`), "invalid-value", at("capabilities")).
			note("capabilities is checked before protocols, whose emptiness is not reported"),
		badD("name-uppercase", withD("capabilities", `["Request_Gzip"]`), "invalid-value", at("capabilities")).
			note("names are lowercase: no name is matched without regard to case"),
		badD("name-65-bytes", withD("protocols", `["`+long+`z"]`), "invalid-value", at("protocols")),
		badD("name-repeated", withD("capabilities", `["request_gzip","request_gzip"]`), "integrity", at("capabilities")),
		badD("names-out-of-order", withD("capabilities", `["request_gzip","chunk_reference"]`), "integrity", at("capabilities")).
			note("names are in ascending order of their bytes, so that one declaration has one text"),
		badD("capabilities-65", withD("capabilities", "["+strings.Join(many, ",")+"]"), "limit-exceeded", at("capabilities")),
		badD("protocols-empty", withD("protocols", `[]`).with("capabilities", `[]`), "invalid-value", at("protocols")).
			note("a declaration names at least one protocol; " + v2 + " is the smallest that declares v2"),
	}, nil
}
