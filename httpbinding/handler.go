package httpbinding

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Defaults of a Handler.
const (
	// DefaultMaxInFlight is how many requests of one vessel are served
	// at once: enough for a sender to fill a far link. Over a VSAT link
	// (600 ms round trip, 256 kbit/s up) 19 KB are in flight while the
	// first answer comes back, a dozen gzipped chunks of a typical
	// snapshot; fewer leave the link idle for a round trip per window
	// (internal/linkbench). With a health probe and a capability fetch
	// it fills the 16 streams of an HTTP/2 connection.
	DefaultMaxInFlight     = 14
	DefaultRetryAfter      = 30 * time.Second // Retry-After of 429 and 503 answers
	DefaultReceiveTimeout  = 20 * time.Second // staging one message
	DefaultFinalizeTimeout = 60 * time.Second // one Finalize after a complete receipt
)

// A Handler is the server side of the binding (SPEC.md §11): an
// http.Handler that stages one wrapped outbox request per POST through a
// finalize.Receiver and answers with its receipt or refusal. It answers
// every path it is mounted at, and is safe for concurrent use.
//
// The answers, in the order the checks run:
//
//	405 a method other than POST and GET (Allow: GET, POST; plain text)
//	401 an Authorization header on a connection without TLS, whatever the
//	    Authenticator (InsecureNoAuth included; WWW-Authenticate: Bearer
//	    with error="invalid_token"), or the Authenticator refused
//	    (WWW-Authenticate from a Challenger; plain text, saying why a
//	    client certificate was refused: RefusalReason)
//	200 a GET: the capability declaration (WithCapabilities; SPEC.md
//	    §11.7), with the max-age of WithDeclarationMaxAge, or 400 for a
//	    GET announcing a body, which is not read
//	415 a Content-Type other than application/json, or several, or a
//	    Content-Encoding other than one gzip or identity (refusal unsupported)
//	429 the vessel has its limit of requests in flight (refusal store_unavailable; Retry-After)
//	413 a body over MaxRequestBody, as sent or, gzipped, decompressed; the
//	    rest is not read or decompressed (refusal limit_exceeded)
//	400 the body could not be read, such as a sender cut by the read
//	    timeout, or a gzip body is not one valid member (plain text)
//	422 the request or its message does not decode, or its entity key does not name it
//	403 foreign_vessel, unregistered_vessel
//	409 conflict, revision_conflict
//	503 staging_exhausted, store_unavailable (Retry-After)
//	200 the receipt, only once the Receiver staged the message durably
//
// A refusal's message is its class's text alone (sourcecatalog's class
// error, such as "store unavailable"), never a detail or a cause: those
// go to the Observer (SPEC.md §11.3).
//
// Every answer given before the body is read in full (405, 401, 415,
// 429, 413, 400) hangs up after it, so that an unread body is never
// interpreted; so does every answer to a request sent with a
// Transfer-Encoding (RFC 9112 §6.3: a Content-Length beside it cannot be
// trusted). Hanging up is a bounded lingering close: the answer is sent,
// the write side closed, and what the sender still sends is dropped until
// it closes, for at most 1 MiB and 2 s, so that the sender reads the
// answer instead of a connection reset. The
// Receiver stages the message within the receive timeout: a store that
// does not answer in time is 503 store_unavailable, never a receipt, and
// frees the vessel's slot. When a receipt reports the set complete the
// Handler runs Finalize before answering (SPEC.md §11.4) — unless the
// message was a resend for a snapshot the Receiver had already finalized,
// for which Finalize would only report its outcome again, or the Receiver
// finalized the set with the message (finalize.WithFinalizeWhenComplete,
// within the receive timeout), whose outcome the Handler reports
// (finalize.Staged.NeedsFinalize) — on a context detached from the
// request and bounded by the finalize timeout; a Finalize failure is
// reported to the Observer and never changes the answer, since the
// receipt is already durable.
type Handler struct {
	recv            *finalize.Receiver
	auth            Authenticator
	observe         Observer
	limit           *limiter
	retryAfter      time.Duration
	receiveTimeout  time.Duration
	finalizeTimeout time.Duration
	declaration     []byte // the canonical bytes a GET is answered with
	declarationAge  string // its Cache-Control; "" for the default
	refs            bool   // chunk references accepted (chunkref.go)
	index           bool   // manifest indexes accepted (index.go)
}

var _ http.Handler = (*Handler)(nil)

// A HandlerOption configures a Handler.
type HandlerOption func(*Handler)

// WithObserver makes the Handler report every request and every Finalize
// to o.
func WithObserver(o Observer) HandlerOption { return func(h *Handler) { h.observe = o } }

// WithMaxInFlight sets how many requests of one vessel are served at once
// (default DefaultMaxInFlight; at least 1); more are answered 429.
func WithMaxInFlight(n int) HandlerOption {
	return func(h *Handler) { h.limit = newLimiter(max(1, n)) }
}

// WithRetryAfter sets the Retry-After of 429 and 503 answers (default
// DefaultRetryAfter, at least a second, in whole seconds).
func WithRetryAfter(d time.Duration) HandlerOption { return func(h *Handler) { h.retryAfter = d } }

// WithReceiveTimeout bounds the Receiver's staging of one message
// (default DefaultReceiveTimeout); a store that takes longer is answered
// 503 store_unavailable.
func WithReceiveTimeout(d time.Duration) HandlerOption {
	return func(h *Handler) { h.receiveTimeout = d }
}

// WithFinalizeTimeout bounds a Finalize run after a complete receipt
// (default DefaultFinalizeTimeout). The server's WriteTimeout must exceed
// it and the receive timeout together, or the sender loses the receipt of
// a slow activation (and resends).
func WithFinalizeTimeout(d time.Duration) HandlerOption {
	return func(h *Handler) { h.finalizeTimeout = d }
}

// NewHandler returns a Handler staging through recv, authenticating with
// auth. It panics when recv or auth is nil: an unauthenticated Handler is
// built only with InsecureNoAuth.
func NewHandler(recv *finalize.Receiver, auth Authenticator, opts ...HandlerOption) *Handler {
	if recv == nil || auth == nil {
		panic("httpbinding: NewHandler needs a Receiver and an Authenticator")
	}
	h := &Handler{
		recv: recv, auth: auth, observe: func(Event) {}, limit: newLimiter(DefaultMaxInFlight),
		retryAfter: DefaultRetryAfter, receiveTimeout: DefaultReceiveTimeout, finalizeTimeout: DefaultFinalizeTimeout,
	}
	for _, o := range opts {
		o(h)
	}
	if h.declaration == nil {
		h.declaration = defaultDeclaration
		if h.refs {
			h.declaration = refsDeclaration
		}
		if h.index {
			h.declaration = indexDeclaration(h.refs)
		}
	}
	if h.observe == nil {
		h.observe = func(Event) {}
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ev := &reply{Event: Event{Kind: EventMessage}}
	defer func() {
		ev.Duration = time.Since(start)
		h.observe(ev.Event) // before the sender can see the answer
		if ev.hangUp {
			hangUp(w)
		}
	}()
	if len(r.TransferEncoding) > 0 {
		ev.hangUp = true
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		w.Header().Set("Allow", allowedMethods)
		h.plain(w, ev, http.StatusMethodNotAllowed, OutcomeMethodNotAllowed, nil)
		return
	}
	if r.TLS == nil && len(r.Header.Values("Authorization")) > 0 {
		// Whatever the Authenticator, InsecureNoAuth included: a
		// credential sent in clear is to be taken as leaked (SPEC.md §11.2).
		w.Header().Set("WWW-Authenticate", challengeInvalidToken)
		h.plain(w, ev, http.StatusUnauthorized, OutcomeUnauthenticated, errCredentialsInClear)
		return
	}
	origin, err := h.auth.Authenticate(r)
	if err != nil {
		if c, ok := h.auth.(Challenger); ok {
			w.Header().Set("WWW-Authenticate", c.Challenge(err))
		}
		h.unauthorized(w, ev, err)
		return
	}
	ev.Vessel = origin.VesselID
	if r.Method == http.MethodGet {
		h.declare(w, r, ev)
		return
	}
	if ct := r.Header.Values("Content-Type"); len(ct) != 1 || !isJSON(ct[0]) {
		h.refuseUnread(w, ev, http.StatusUnsupportedMediaType, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "the request must be application/json, with one Content-Type"))
		return
	}
	gzipped, ok := requestCoding(r.Header)
	if !ok {
		h.refuseUnread(w, ev, http.StatusUnsupportedMediaType, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "the request's Content-Encoding must be one gzip or identity"))
		return
	}
	if !h.limit.acquire(origin.VesselID) {
		h.refuseUnread(w, ev, http.StatusTooManyRequests, sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "too many requests of the vessel in flight"))
		return
	}
	defer h.limit.release(origin.VesselID)
	body, err := readBody(w, r, gzipped)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.refuseUnread(w, ev, http.StatusRequestEntityTooLarge, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the request is larger than 32768 bytes"))
		return
	case err != nil:
		h.plain(w, ev, http.StatusBadRequest, OutcomeBadRequest, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.receiveTimeout)
	defer cancel()
	st, err := h.receive(ctx, origin, body, &ev.Event)
	if err != nil {
		h.refuse(w, ev, StatusOf(envelope.RefusalOf(err).Class), err)
		return
	}
	rc := st.Receipt
	switch run := st.FinalizeRun; {
	case run != nil: // finalized with the message, in its transaction
		h.observe(Event{
			Kind: EventFinalize, Vessel: origin.VesselID, Snapshot: rc.SnapshotID, Trigger: TriggerReceipt,
			Finalize: &run.Outcome, Err: run.Err, Duration: run.Duration,
		})
	case st.NeedsFinalize():
		h.finalize(r.Context(), origin.VesselID, rc.SnapshotID)
	}
	ev.Status, ev.Outcome = http.StatusOK, string(rc.Status)
	writeAnswer(w, http.StatusOK, rc.Canonical())
}

// readBody reads at most MaxRequestBody bytes of the body and returns the
// wrapped request: the body, or when gzipped its decompressed bytes
// (readGzipBody). A longer body, announced or sent, or one that decompresses to
// more, is an *http.MaxBytesError, and only MaxRequestBody+1 bytes of it
// are ever read or decompressed; a gzipped body that is not one valid
// member is an error wrapping errNotGzip (SPEC.md §11.1).
func readBody(w http.ResponseWriter, r *http.Request, gzipped bool) ([]byte, error) {
	if r.ContentLength > MaxRequestBody {
		return nil, &http.MaxBytesError{Limit: MaxRequestBody}
	}
	if gzipped {
		return readGzipBody(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
}

// receive decodes the request, checks its entity key and hands the message
// to the Receiver, noting in ev the entity type and snapshot as far as
// they decode, and returns what the Receiver staged: the receipt, and
// whether the snapshot was finalized before. A receipt that fails its own
// Check is refused as ErrStoreUnavailable: no answer claims what the store
// did not make.
func (h *Handler) receive(ctx context.Context, origin finalize.Origin, body []byte, ev *Event) (finalize.Staged, error) {
	req, err := decodeRequest(body, h.refs, h.index)
	if err != nil {
		return finalize.Staged{}, err
	}
	ev.EntityType = req.entityType
	var chunk *envelope.Chunk
	var ref *envelope.ChunkRef
	if ev.Snapshot, chunk, ref, err = req.checkKey(); err != nil {
		return finalize.Staged{}, err
	}
	var st finalize.Staged
	if req.entityType == sourcecatalog.ManifestIndexEntityType {
		st, err = h.recv.StageManifestIndex(ctx, origin, req.payload)
	} else if ref != nil {
		st, err = h.recv.StageChunkRef(ctx, origin, ref)
	} else if chunk != nil {
		st, err = h.recv.StageChunk(ctx, origin, chunk)
	} else {
		st, err = h.recv.StageManifest(ctx, origin, req.payload)
	}
	if err != nil {
		return finalize.Staged{}, err
	}
	if err := st.Receipt.Check(); err != nil {
		// The cause stays inside: the sender learns only the class.
		return finalize.Staged{}, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("the receiver made an invalid receipt: %w", err))
	}
	return st, nil
}

// finalize runs Finalize after a complete receipt and reports it.
func (h *Handler) finalize(ctx context.Context, vessel, snapshot uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.finalizeTimeout)
	defer cancel()
	start := time.Now()
	out, err := h.recv.Finalize(ctx, vessel, snapshot)
	h.observe(Event{
		Kind: EventFinalize, Vessel: vessel, Snapshot: snapshot, Trigger: TriggerReceipt,
		Finalize: &out, Err: err, Duration: time.Since(start),
	})
}

// A reply is what ServeHTTP reports of a request, and whether it hangs up
// after the answer.
type reply struct {
	Event
	hangUp bool
}

// refuse answers the refusal of err with status; the Observer gets err.
func (h *Handler) refuse(w http.ResponseWriter, ev *reply, status int, err error) {
	f := refusalOf(err)
	ev.Status, ev.Outcome, ev.Err = status, sourcecatalog.WireName(f.Class), err
	writeRefusal(w, status, f, h.retryAfter)
}

// refusalOf returns the refusal the binding sends for err (SPEC.md
// §11.3): the class and location of its first problem, as
// envelope.RefusalOf finds them, with the class's own text as the message
// — never a detail or a cause, which may come from the store and describe
// the server's internals (a file name, a driver's message, a lock). A
// refusal of staging_exhausted or store_unavailable, which is about the
// receiver and not the message, has no location either.
func refusalOf(err error) envelope.Refusal {
	f := envelope.RefusalOf(err)
	f.Message = f.Class.Error()
	if f.Class == sourcecatalog.ErrStoreUnavailable || f.Class == sourcecatalog.ErrStagingExhausted {
		f.Chunk, f.Record, f.Field = sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""
	}
	return f
}

// refuseUnread answers the refusal of err with status before the body
// was read, and hangs up.
func (h *Handler) refuseUnread(w http.ResponseWriter, ev *reply, status int, err error) {
	closeConn(w)
	h.refuse(w, ev, status, err)
	ev.hangUp = true
}

// plain answers status in plain text, before or instead of reading the
// body, and hangs up.
func (h *Handler) plain(w http.ResponseWriter, ev *reply, status int, outcome string, err error) {
	h.text(w, ev, status, outcome, err, http.StatusText(status)+"\n")
}

// text answers status with body in plain text and hangs up.
func (h *Handler) text(w http.ResponseWriter, ev *reply, status int, outcome string, err error, body string) {
	ev.Status, ev.Outcome, ev.Err = status, outcome, err
	closeConn(w)
	writeText(w, status, body)
	ev.hangUp = true
}

// unauthorized answers 401 for err, the Authenticator's refusal, and
// hangs up: plain text, "Unauthorized", and the RefusalReason of err when
// it has one (SPEC.md §11.2).
func (h *Handler) unauthorized(w http.ResponseWriter, ev *reply, err error) {
	body := http.StatusText(http.StatusUnauthorized)
	if why := RefusalReason(err); why != "" {
		body += ": " + why
	}
	h.text(w, ev, http.StatusUnauthorized, OutcomeUnauthenticated, err, body+"\n")
}

// closeConn announces that the connection closes after the answer, which
// also stops net/http from draining the body before answering.
func closeConn(w http.ResponseWriter) { w.Header().Set("Connection", "close") }

// hangUp sends the answer written so far and closes the connection with
// a bounded lingering close (lingeringClose): net/http would otherwise
// read up to 256 KiB of an unread body after the handler returns, hoping
// to reuse the connection, or close it with the body unread, which makes
// the kernel reset it and can destroy the answer before the sender reads
// it. Where the connection cannot be taken over (HTTP/2, a recorder),
// Connection: close is the fallback.
func hangUp(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, buf, err := rc.Hijack()
	if err != nil {
		return
	}
	lingeringClose(conn, buf)
}

// Bounds of a lingering close: what is left of an answer is sent within
// hangUpTimeout; then at most lingerBytes of the sender's unread bytes are
// read and dropped, within lingerTimeout.
const (
	hangUpTimeout = 5 * time.Second
	lingerBytes   = 1 << 20
	lingerTimeout = 2 * time.Second
)

// lingeringClose sends what buf holds of the answer, closes the
// connection's write side (TLS close_notify, then a TCP FIN), and reads
// and drops what the sender still sends — the rest of a body it was
// sending when the answer came — until it closes its side, lingerBytes
// were dropped or lingerTimeout passed, and only then closes the
// connection. Closing a socket with bytes unread makes the kernel answer
// with a reset, and a reset can make the sender's kernel drop the answer
// it received but has not yet read: the sender would see a network fault,
// not the answer, and send again. Nothing read is ever interpreted.
func lingeringClose(conn net.Conn, buf *bufio.ReadWriter) {
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(hangUpTimeout))
	if buf.Flush() != nil || closeWrite(conn) != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.CopyN(io.Discard, buf.Reader, lingerBytes)
}

// closeWrite closes the write side of conn: over TLS the close_notify
// alert, then the TCP connection's write half where there is one.
func closeWrite(conn net.Conn) error {
	if tc, ok := conn.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return err
		}
		conn = tc.NetConn()
	}
	if hc, ok := conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return nil
}
