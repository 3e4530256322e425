package httpbinding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The names of the capability declaration (SPEC.md §11.7).
const (
	// ProtocolV2 is the protocol name a receiver of this specification
	// declares in protocols.
	ProtocolV2 = sourcecatalog.Protocol
	// CapabilityRequestGzip: the receiver accepts request bodies sent
	// with Content-Encoding: gzip.
	CapabilityRequestGzip = "request_gzip"
	// CapabilityChunkReference: the receiver accepts a chunk sent by
	// reference to a payload it already holds for that vessel.
	CapabilityChunkReference = "chunk_reference"
	// CapabilityManifestIndex: the receiver accepts a manifest index
	// (SPEC.md §6.7) and answers it with the chunks it still needs.
	CapabilityManifestIndex = "manifest_index"
)

// Bounds of a declaration (SPEC.md §11.7).
const (
	MaxDeclarationSize   = envelope.MaxAnswerSize // bytes of text
	MaxDeclaredName      = 64                     // bytes of one name
	MaxDeclaredProtocols = 16
	MaxCapabilities      = 64
)

// How long a declaration may be reused (SPEC.md §11.7): the max-age a
// Handler states by default, and the most a sender reuses one for,
// whatever the receiver states.
const (
	DefaultDeclarationMaxAge = 30 * time.Minute
	MaxDeclarationMaxAge     = time.Hour
)

// knownCapabilities are the optional capabilities this library knows.
var knownCapabilities = map[string]bool{CapabilityRequestGzip: true, CapabilityChunkReference: true, CapabilityManifestIndex: true}

// A Declaration is a receiver's capability declaration (SPEC.md §11.7).
// Each list is in canonical order, without repetition.
type Declaration struct {
	Protocols []string // every protocol declared, known or not
	// Capabilities are the declared optional capabilities this library
	// knows (CapabilityRequestGzip, CapabilityChunkReference).
	Capabilities []string
	// Unknown are the declared capability names this library does not
	// know: kept to be shown, never acted upon.
	Unknown []string
}

// V2 reports whether d declares ProtocolV2.
func (d Declaration) V2() bool { return slices.Contains(d.Protocols, ProtocolV2) }

// Has reports whether d declares the capability name and this library
// knows it: an unknown name is never reported as supported.
func (d Declaration) Has(name string) bool {
	return knownCapabilities[name] && slices.Contains(d.Capabilities, name)
}

// Canonical returns the declaration's canonical bytes: its protocols and
// every capability it declares, the unknown ones included, in canonical
// order. It is what a receiver answers (SPEC.md §11.7).
func (d Declaration) Canonical() []byte {
	caps := append(slices.Clone(d.Capabilities), d.Unknown...)
	slices.Sort(caps)
	b := []byte(`{"capabilities":`)
	b = appendNames(b, caps)
	b = append(b, `,"protocols":`...)
	b = appendNames(b, d.Protocols)
	return append(b, '}')
}

// String returns the declaration's canonical text.
func (d Declaration) String() string { return string(d.Canonical()) }

func appendNames(b []byte, names []string) []byte {
	b = append(b, '[')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, n) // a name is plain ASCII: its quoted form is canonical
	}
	return append(b, ']')
}

// NewDeclaration returns the declaration of protocol v2 with the given
// optional capabilities, checked as DecodeDeclaration checks a received
// one. It returns an error wrapping sourcecatalog.ErrInvalidValue (a name
// that is no name), ErrIntegrity (a repeated name) or ErrLimitExceeded
// (more than MaxCapabilities) at field capabilities.
func NewDeclaration(capabilities ...string) (Declaration, error) {
	caps := slices.Clone(capabilities)
	slices.Sort(caps)
	d := Declaration{Protocols: []string{ProtocolV2}}
	if len(caps) > MaxCapabilities {
		return Declaration{}, limitErr("capabilities", MaxCapabilities)
	}
	for i, c := range caps {
		if err := checkName("capabilities", i, c); err != nil {
			return Declaration{}, err
		}
		if i > 0 && caps[i-1] == c {
			return Declaration{}, sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "the name "+c+" is declared twice").AtField("capabilities")
		}
		d.add(c)
	}
	return d, nil
}

// add files a capability name as known or unknown.
func (d *Declaration) add(name string) {
	if knownCapabilities[name] {
		d.Capabilities = append(d.Capabilities, name)
	} else {
		d.Unknown = append(d.Unknown, name)
	}
}

var declarationFields = []string{"capabilities", "protocols"}

// DecodeDeclaration strictly decodes a declaration's text (SPEC.md
// §11.7), in any member order and whitespace, and reports the first
// problem as a *sourcecatalog.Error of its class located at its member
// (Field; no chunk or record): text over MaxDeclarationSize bytes
// (ErrLimitExceeded); not strict JSON (ErrMalformedJSON, wrapping the
// *canonical.SyntaxError); not an object (ErrInvalidValue); an unknown
// (ErrUnknownField) or missing (ErrMissingField) member in canonical name
// order; then capabilities, then protocols: not an array
// (ErrInvalidValue), more names than MaxCapabilities or
// MaxDeclaredProtocols (ErrLimitExceeded), an element that is not a
// string or not 1 to MaxDeclaredName bytes of [a-z0-9_.-]
// (ErrInvalidValue), an element not after the one before it — repeated
// or out of order — (ErrIntegrity); then no protocol (ErrInvalidValue).
//
// A declaration that decodes may name no v2 (Declaration.V2). Unknown
// capability names are kept in Unknown.
func DecodeDeclaration(text []byte) (Declaration, error) {
	if len(text) > MaxDeclarationSize {
		return Declaration{}, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the declaration is larger than "+strconv.Itoa(MaxDeclarationSize)+" bytes")
	}
	v, err := canonical.Parse(text)
	if err != nil {
		return Declaration{}, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	if v.Kind() != canonical.KindObject {
		return Declaration{}, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "the declaration must be a JSON object")
	}
	mems := v.Members()
	for i, name := range declarationFields {
		switch {
		case i < len(mems) && mems[i].Name < name:
			return Declaration{}, unknownMember(mems[i].Name)
		case i >= len(mems) || mems[i].Name != name:
			return Declaration{}, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField(name)
		}
	}
	if len(mems) > len(declarationFields) {
		return Declaration{}, unknownMember(mems[len(declarationFields)].Name)
	}
	var d Declaration
	caps, err := names(&mems[0].Value, "capabilities", MaxCapabilities)
	if err != nil {
		return Declaration{}, err
	}
	for _, c := range caps {
		d.add(c)
	}
	if d.Protocols, err = names(&mems[1].Value, "protocols", MaxDeclaredProtocols); err != nil {
		return Declaration{}, err
	}
	if len(d.Protocols) == 0 {
		return Declaration{}, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "at least one protocol is declared").AtField("protocols")
	}
	return d, nil
}

func unknownMember(name string) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not a member of the declaration").AtField(name)
}

// names reads the array of names of the member field, at most limit.
func names(v *canonical.Value, field string, limit int) ([]string, error) {
	if v.Kind() != canonical.KindArray {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "must be an array of names").AtField(field)
	}
	elems := v.Elems()
	if len(elems) > limit {
		return nil, limitErr(field, limit)
	}
	out := make([]string, 0, len(elems))
	for i := range elems {
		if elems[i].Kind() != canonical.KindString {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("element %d is not a string", i)).AtField(field)
		}
		s := elems[i].Str()
		if err := checkName(field, i, s); err != nil {
			return nil, err
		}
		if i > 0 && s <= out[i-1] {
			why := "out of canonical order"
			if s == out[i-1] {
				why = "a repetition"
			}
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, fmt.Sprintf("element %d is %s", i, why)).AtField(field)
		}
		out = append(out, s)
	}
	return out, nil
}

func limitErr(field string, limit int) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than "+strconv.Itoa(limit)+" names").AtField(field)
}

// checkName checks element i of field: 1 to MaxDeclaredName bytes of
// [a-z0-9_.-]. The name itself is never quoted: it may be anything.
func checkName(field string, i int, s string) error {
	ok := len(s) >= 1 && len(s) <= MaxDeclaredName
	for j := 0; ok && j < len(s); j++ {
		c := s[j]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue,
			fmt.Sprintf("element %d is not 1 to %d bytes of a-z, 0-9, _, . and -", i, MaxDeclaredName)).AtField(field)
	}
	return nil
}

// ErrNoDeclaration is Declaration's error when the receiver does not
// answer the capability declaration (SPEC.md §11.7) — 404, 405 or 501,
// or a 200 of another media type than application/json —, as a receiver
// that predates it, such as the installed v1 receiver, answers. It wraps
// outbox.ErrCapabilityOff (class sourcecatalog.ErrUnsupported): the gate
// stays off.
var ErrNoDeclaration error = noDeclaration{}

type noDeclaration struct{}

func (noDeclaration) Error() string {
	return "httpbinding: the receiver answers no capability declaration (SPEC.md §11.7)"
}
func (noDeclaration) Unwrap() error { return outbox.ErrCapabilityOff }

// A DeclarationError is Declaration's error when the receiver answered
// 200 application/json with a text that is not a declaration of
// protocol v2: it does not decode (SPEC.md §11.7), or it names no
// ProtocolV2. It wraps outbox.ErrCapabilityOff (class
// sourcecatalog.ErrUnsupported) and nothing else: the gate stays off.
// Problem says what is wrong and where.
type DeclarationError struct {
	// Problem is the decoder's *sourcecatalog.Error (DecodeDeclaration):
	// its class and Field say what is wrong and where; for a declaration
	// without v2, class ErrUnsupported at protocols.
	Problem *sourcecatalog.Error
	// Declared is the declaration, when it decoded.
	Declared *Declaration
}

func (e *DeclarationError) Error() string {
	return "httpbinding: the receiver's answer is no declaration of v2 (SPEC.md §11.7): " + e.Problem.Error()
}

// Unwrap returns outbox.ErrCapabilityOff.
func (e *DeclarationError) Unwrap() error { return outbox.ErrCapabilityOff }

// Declaration reads the receiver's capability declaration: GET on the
// Client's URL, with its credentials (SPEC.md §11.7). Outcomes:
//
//   - nil error: the receiver declared ProtocolV2; the Declaration says
//     which optional capabilities it declared (Has).
//   - ErrNoDeclaration or a *DeclarationError: the receiver declares no
//     v2 support — it does not answer the declaration, or its answer does
//     not decode, or names no v2. Both wrap outbox.ErrCapabilityOff.
//   - any other error: a failed attempt; nothing was learnt. A 401 wraps
//     ErrUnauthorized and a TLS verification failure is a *TLSError
//     (outbox.NeedsOperator holds for both); everything else — a network
//     failure, a timeout, an answer cut short or over
//     MaxDeclarationSize bytes, a redirect, any other status — wraps
//     sourcecatalog.ErrStoreUnavailable.
//
// It reads the declaration every time it is called; a Gate reuses one for
// the max-age the receiver states.
func (c *Client) Declaration(ctx context.Context) (Declaration, error) {
	d, _, err := c.declaration(ctx)
	return d, err
}

// declaration is Declaration, and also returns for how long the receiver
// lets a declaration of v2 be reused (maxAge); 0 with an error.
func (c *Client) declaration(ctx context.Context) (d Declaration, maxAge time.Duration, err error) {
	req, err := c.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return Declaration{}, 0, err
	}
	resp, err := c.do(req)
	if err != nil {
		return Declaration{}, 0, transportErr(err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return Declaration{}, 0, fmt.Errorf("httpbinding: %w", ErrUnauthorized)
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return Declaration{}, 0, fmt.Errorf("%w: GET answered %d", ErrNoDeclaration, resp.StatusCode)
	case http.StatusOK:
	default:
		return Declaration{}, 0, badAnswer(resp.StatusCode, "to the declaration's GET")
	}
	if !isJSON(resp.Header.Get("Content-Type")) {
		return Declaration{}, 0, fmt.Errorf("%w: GET answered 200 of another media type than application/json", ErrNoDeclaration)
	}
	text, err := io.ReadAll(io.LimitReader(resp.Body, MaxDeclarationSize+1))
	if err != nil {
		return Declaration{}, 0, transportErr(fmt.Errorf("reading the declaration: %w", err))
	}
	if len(text) > MaxDeclarationSize {
		// Like a receipt's (SPEC.md §11.6): an answer over the bound is a
		// failed attempt, not a declaration.
		return Declaration{}, 0, badAnswer(resp.StatusCode, "declaration larger than 4096 bytes")
	}
	d, err = DecodeDeclaration(text)
	if err != nil {
		return Declaration{}, 0, &DeclarationError{Problem: located(err)}
	}
	if !d.V2() {
		return Declaration{}, 0, &DeclarationError{
			Problem:  sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "no "+ProtocolV2+" among the protocols declared").AtField("protocols"),
			Declared: &d,
		}
	}
	return d, declarationMaxAge(resp.Header.Values("Cache-Control")), nil
}

// declarationMaxAge reads the max-age of a declaration's Cache-Control
// field lines (SPEC.md §11.7): 0 — no reuse — when there is none, when
// no-store or no-cache is among the directives, when max-age is given
// more than once or its value is not digits; at most
// MaxDeclarationMaxAge, a value too large to parse included.
func declarationMaxAge(lines []string) time.Duration {
	var age time.Duration
	seen := false
	for _, line := range lines {
		for _, dir := range strings.Split(line, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				if seen {
					return 0
				}
				seen = true
				value = strings.TrimSpace(value)
				if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
					value = value[1 : len(value)-1]
				}
				n, err := strconv.ParseUint(value, 10, 32) // digits only: no sign
				if err != nil && !errors.Is(err, strconv.ErrRange) {
					return 0
				}
				age = time.Duration(min(n, uint64(MaxDeclarationMaxAge/time.Second))) * time.Second
			}
		}
	}
	return age
}

// located returns err, one of DecodeDeclaration's, as its
// *sourcecatalog.Error.
func located(err error) *sourcecatalog.Error {
	if p := sourcecatalog.Problems(err); len(p) > 0 {
		return p[0]
	}
	return sourcecatalog.Wrap(sourcecatalog.Class(err), err)
}

// A Gate is the capability gate of SPEC.md §7.5 in auto mode: an
// outbox.Gate that opens only while the receiver declares protocol v2
// (Client.Declaration), asked at every Open — once per
// outbox.Publisher.Drain. It reuses a declaration of v2 for the max-age
// the receiver states with it, at most MaxDeclarationMaxAge, and reads it
// again at the first Open after that; or after an answer of the receiver
// to a message sent through its Client that says it no longer accepts
// what was sent — 400, 404, 405, 415 or 501, or a refusal of class
// unsupported — (SPEC.md §11.7). After such an answer the Client sends
// nothing more until the declaration is read again: its next Send reads
// it first, and sends only when the receiver still declares v2. A new
// Gate reads it at its first Open. It is safe for concurrent use.
type Gate struct {
	client *Client
	now    func() time.Time // the clock validity is measured on
	mu     sync.Mutex
	read   bool // a declaration was asked for
	last   Declaration
	err    error     // why the last read declared no v2
	until  time.Time // last may be reused before then
	seen   uint64    // client.downgrades when last was read
}

var _ outbox.Gate = (*Gate)(nil)

// NewGate returns the auto-mode gate asking c's receiver. The gate makes
// the sender follow the declaration it last read: c compresses request
// bodies while the receiver declares request_gzip, as with
// WithRequestCompression (SPEC.md §11.1), and a Publisher with the gate
// sends chunk references while it declares chunk_reference (SPEC.md §6.6;
// outbox.ReferenceGate) and manifest indexes while it declares
// manifest_index (SPEC.md §6.7; outbox.IndexGate). Before a declaration is read, after one that
// names no v2, and from an answer that says the receiver no longer
// accepts what was sent until the declaration is read again, the gate
// offers neither. The Client follows the last Gate made of it.
func NewGate(c *Client) *Gate {
	g := &Gate{client: c, now: time.Now}
	c.gate.Store(g)
	return g
}

var _ outbox.ReferenceGate = (*Gate)(nil)

// ChunkReferences implements outbox.ReferenceGate: whether the last
// declaration read named chunk_reference, and no answer since said that
// the receiver no longer accepts what was sent.
func (g *Gate) ChunkReferences() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen == g.client.downgrades.Load() && g.last.Has(CapabilityChunkReference)
}

var _ outbox.IndexGate = (*Gate)(nil)

// ManifestIndexes implements outbox.IndexGate: whether the last
// declaration read named manifest_index, and no answer since said that
// the receiver no longer accepts what was sent.
func (g *Gate) ManifestIndexes() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen == g.client.downgrades.Load() && g.last.Has(CapabilityManifestIndex)
}

// Open implements outbox.Gate: it returns nil when the receiver declares
// v2, ErrNoDeclaration or a *DeclarationError (both wrapping
// outbox.ErrCapabilityOff) when it does not, and Declaration's other
// errors for a failed attempt. It reads the declaration unless the last
// one read declared v2 and may still be reused (Gate). declared
// describes what the receiver declared, for logs: the declaration's
// canonical text, or why there is none; "" after a failed attempt.
func (g *Gate) Open(ctx context.Context) (declared string, err error) {
	if d, ok := g.reuse(); ok {
		return d.String(), nil
	}
	seen, start := g.client.downgrades.Load(), g.now()
	d, maxAge, err := g.client.declaration(ctx)
	g.mu.Lock()
	g.last = d // the zero Declaration unless v2 is declared: fail closed
	g.until, g.seen, g.read, g.err = start.Add(maxAge), seen, true, err
	g.client.declared.Store(d.Has(CapabilityRequestGzip) && seen == g.client.downgrades.Load())
	g.mu.Unlock()
	var de *DeclarationError
	switch {
	case err == nil:
		return d.String(), nil
	case errors.As(err, &de) && de.Declared != nil:
		return de.Declared.String(), err
	case errors.As(err, &de):
		return "not a declaration: " + de.Problem.Error(), err
	case errors.Is(err, ErrNoDeclaration):
		return "none: " + strings.TrimPrefix(err.Error(), ErrNoDeclaration.Error()+": "), err
	}
	return "", err
}

// reuse returns the last declaration read when it declared v2, its
// max-age has not passed since it was asked for, and no answer since said
// that the receiver no longer accepts what was sent.
func (g *Gate) reuse() (Declaration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ok := g.last.V2() && g.now().Before(g.until) && g.seen == g.client.downgrades.Load()
	return g.last, ok
}

// beforeSend is asked by the Client before each message. Before any
// read it returns nil: the gate's Open, not the Client, decides. Once an
// answer said that the receiver no longer accepts what was sent, it reads
// the declaration again first. It returns nil while the last read
// declared v2, and otherwise why not — the receiver declares no v2, or
// the read failed —, until the next read: the gate then stays closed for
// the rest of the Publisher's drain, without a read per message.
func (g *Gate) beforeSend(ctx context.Context) error {
	g.mu.Lock()
	read, stale, err := g.read, g.seen != g.client.downgrades.Load(), g.err
	g.mu.Unlock()
	switch {
	case !read:
		return nil
	case stale:
		_, err = g.Open(ctx)
	}
	if err != nil {
		return fmt.Errorf("httpbinding: not sent, the receiver's declaration read again after an answer refusing what was sent: %w", err)
	}
	return nil
}

// Declared returns the last declaration of v2 the gate read, or the zero
// Declaration: which optional capabilities a sender may use (Has).
func (g *Gate) Declared() Declaration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// allowedMethods is the Allow header of a 405 (SPEC.md §11.1).
const allowedMethods = "GET, POST"

// defaultDeclaration is a Handler's declaration without WithCapabilities:
// protocol v2 and request_gzip, which every Handler accepts (SPEC.md
// §11.1); refsDeclaration adds chunk_reference, for a Handler that
// accepts chunk references (WithChunkReferences).
var (
	defaultDeclaration = Declaration{Capabilities: []string{CapabilityRequestGzip}, Protocols: []string{ProtocolV2}}.Canonical()
	refsDeclaration    = Declaration{Capabilities: []string{CapabilityChunkReference, CapabilityRequestGzip}, Protocols: []string{ProtocolV2}}.Canonical()
)

// WithCapabilities makes the Handler declare protocol v2 and exactly the
// optional capabilities names (SPEC.md §11.7). By default it declares
// what it accepts: CapabilityRequestGzip, which every Handler accepts,
// and CapabilityChunkReference with WithChunkReferences(true). Declare
// only what the server accepts. It panics, as NewHandler does for a missing
// Receiver, when the names are no declaration (NewDeclaration's error):
// they are the server's own constants, not input.
func WithCapabilities(names ...string) HandlerOption {
	d, err := NewDeclaration(names...)
	if err != nil {
		panic("httpbinding: WithCapabilities: " + err.Error())
	}
	b := d.Canonical()
	return func(h *Handler) { h.declaration = b }
}

// declare answers an authenticated GET with the declaration, or 400 when
// it announces a body, which is never read.
func (h *Handler) declare(w http.ResponseWriter, r *http.Request, ev *reply) {
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		h.plain(w, ev, http.StatusBadRequest, OutcomeBadRequest, errGetWithBody)
		return
	}
	ev.Status, ev.Outcome = http.StatusOK, OutcomeDeclaration
	cc := h.declarationAge
	if cc == "" {
		cc = declarationCacheControl(DefaultDeclarationMaxAge)
	}
	w.Header().Set("Cache-Control", cc)
	writeAnswer(w, http.StatusOK, h.declaration)
}

// WithDeclarationMaxAge sets how long the Handler lets a sender reuse its
// declaration before reading it again (SPEC.md §11.7): its GET is
// answered with Cache-Control: private, max-age=N, N the whole seconds of
// d, at most MaxDeclarationMaxAge (default DefaultDeclarationMaxAge).
// Zero or less answers Cache-Control: no-store: read before every
// publishing step. A sender learns of a capability added within this
// time at the latest; one withdrawn it learns from the first answer
// refusing it.
func WithDeclarationMaxAge(d time.Duration) HandlerOption {
	cc := declarationCacheControl(d)
	return func(h *Handler) { h.declarationAge = cc }
}

// declarationCacheControl is the Cache-Control of a declaration reusable
// for d.
func declarationCacheControl(d time.Duration) string {
	if d < time.Second {
		return "no-store"
	}
	return "private, max-age=" + strconv.FormatInt(int64(min(d, MaxDeclarationMaxAge)/time.Second), 10)
}

var errGetWithBody = errors.New("httpbinding: a GET announced a body")
