package httpbinding

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// DefaultClientTimeout bounds one Send: connecting, the handshake, the
// request and the whole answer.
const DefaultClientTimeout = 2 * time.Minute

// ErrUnauthorized is wrapped by Send's error when the receiver answers 401:
// the credentials are missing or refused. It wraps
// sourcecatalog.ErrStoreUnavailable, so the entry stays pending (SPEC.md
// §11.6), and outbox.ErrNeedsOperator: resending will not help until an
// operator fixes the credentials, so the Publisher stops its pass and
// Drain stops.
var ErrUnauthorized error = &sourcecatalog.Error{
	Class: sourcecatalog.ErrStoreUnavailable, Chunk: sourcecatalog.NoIndex, Record: sourcecatalog.NoIndex,
	Detail: "the receiver refused the credentials (401)", Err: outbox.ErrNeedsOperator,
}

// A TLSError is Send's error when TLS verification failed: the client did
// not verify the receiver's certificate (an unknown authority — a CA
// missing from the roots —, another host name, expired), or the receiver,
// or a proxy before it, refused the client's certificate with a TLS alert
// about it (bad, unknown, expired, revoked or required certificate,
// unknown CA, access denied). Sending again cannot help until an operator
// fixes the trust or the credentials, so it is not a transient failure
// (nor are the handshake_failure and protocol_version alerts, by which a
// TLS 1.2 server refuses a client certificate, or a handshake it cannot
// negotiate, and which this error covers too):
// it wraps sourcecatalog.ErrInvalidValue (never ErrStoreUnavailable),
// outbox.ErrNeedsOperator and the cause from crypto/tls or crypto/x509.
// The entry stays pending (SPEC.md §11.6).
type TLSError struct {
	// Refused reports a TLS alert from the receiver's side; otherwise the
	// client refused the receiver's certificate.
	Refused bool
	Err     error // the cause
}

func (e *TLSError) Error() string {
	if e.Refused {
		return "httpbinding: the receiver refused the client certificate in the TLS handshake: " + e.Err.Error()
	}
	return "httpbinding: the receiver's certificate failed TLS verification: " + e.Err.Error()
}

// Unwrap returns sourcecatalog.ErrInvalidValue, outbox.ErrNeedsOperator
// and the cause.
func (e *TLSError) Unwrap() []error {
	return []error{sourcecatalog.ErrInvalidValue, outbox.ErrNeedsOperator, e.Err}
}

// certificateAlerts are the texts of the TLS alerts (RFC 8446 §6.2) by
// which a server refuses a client's certificate, or a handshake it cannot
// negotiate (crypto/tls answers a refused client certificate under TLS 1.2
// with handshake_failure): crypto/tls reports a peer's alert as a
// net.OpError "remote error" of an unexported type.
var certificateAlerts = map[string]bool{
	"tls: bad certificate": true, "tls: unsupported certificate": true, "tls: revoked certificate": true,
	"tls: expired certificate": true, "tls: unknown certificate": true, "tls: unknown certificate authority": true,
	"tls: access denied": true, "tls: certificate required": true,
	"tls: handshake failure": true, "tls: protocol version not supported": true,
}

// tlsFailure returns the TLSError err is, or nil when err is no TLS
// verification failure.
func tlsFailure(err error) *TLSError {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		op      *net.OpError
	)
	switch {
	case errors.As(err, &verify):
		return &TLSError{Err: verify}
	case errors.As(err, &unknown):
		return &TLSError{Err: unknown}
	case errors.As(err, &host):
		return &TLSError{Err: host}
	case errors.As(err, &invalid):
		return &TLSError{Err: invalid}
	case errors.As(err, &op) && op.Op == "remote error" && op.Err != nil && certificateAlerts[op.Err.Error()]:
		return &TLSError{Refused: true, Err: op}
	}
	return nil
}

// A Client is the sender side of the binding (SPEC.md §11.6): an
// outbox.Transport that POSTs each entry, wrapped with
// envelope.DefaultWrapper, to one URL. It is safe for concurrent use.
type Client struct {
	endpoint string
	token    string
	compress bool
	declared atomic.Bool // the last declaration its Gate read named request_gzip
	// downgrades counts the answers saying the receiver no longer accepts
	// what was sent (noLongerAccepted): its Gate reads the declaration
	// again after one.
	downgrades atomic.Uint64
	gate       atomic.Pointer[Gate] // the last NewGate of this Client
	hc         *http.Client
	// checkTLS: the transport is the caller's, so each https answer is
	// checked for TLS 1.2 or later.
	checkTLS bool
}

var (
	_ outbox.Transport        = (*Client)(nil)
	_ outbox.CountedTransport = (*Client)(nil)
)

type clientConfig struct {
	tls      *tls.Config
	token    string
	timeout  time.Duration
	compress bool
	hc       *http.Client
}

// A ClientOption configures a Client.
type ClientOption func(*clientConfig)

// WithTLSConfig sets the client's TLS configuration, such as one from
// ClientTLSConfig with the operator's CA and the vessel's certificate
// (default: TLS 1.2 at least, system roots, no client certificate).
func WithTLSConfig(c *tls.Config) ClientOption { return func(cc *clientConfig) { cc.tls = c } }

// WithHTTPClient makes the Client send through the round tripper of hc
// (http.DefaultTransport when hc.Transport is nil), such as one that
// counts bytes, dials through a tunnel or holds the caller's TLS
// configuration. The caller's transport decides how to connect: the
// proxy (http.DefaultTransport's is taken from the environment), the
// dialing, TLS (its roots, client certificate, cipher suites), connection
// reuse, HTTP/2, the bound on an answer's headers and the handshake's own
// timeouts. The Client's own rules still
// apply: the endpoint's checks of NewClient; the bearer token, which the
// Client adds to each request; no redirect is followed (hc.CheckRedirect
// is not used) and no cookie is kept (hc.Jar is not used); the timeout of
// WithTimeout bounds each request, or hc.Timeout when positive and
// shorter; the MaxRequestBody and answer size bounds; and TLS 1.2 at
// least: an https answer whose connection state (http.Response.TLS) is
// missing or below TLS 1.2 is refused as a *TLSError, nothing decoded.
// Because the caller's dialer is not the Client's, an http endpoint's
// host must then be a loopback address (127.0.0.0/8, [::1]), not a name
// such as localhost. WithHTTPClient and WithTLSConfig exclude each other.
func WithHTTPClient(hc *http.Client) ClientOption { return func(cc *clientConfig) { cc.hc = hc } }

// WithBearerToken sends token as "Authorization: Bearer <token>".
func WithBearerToken(token string) ClientOption { return func(cc *clientConfig) { cc.token = token } }

// WithTimeout bounds one Send (default DefaultClientTimeout).
func WithTimeout(d time.Duration) ClientOption { return func(cc *clientConfig) { cc.timeout = d } }

// WithRequestCompression makes the Client compress each wrapped request
// as one gzip member and send it with Content-Encoding: gzip when the
// member is shorter than the request, and the request as it is otherwise
// (SPEC.md §11.1). Use it only for a receiver that declared the capability
// request_gzip: another answers a gzipped body 415 unsupported. Without
// it (the default) no body is compressed and no Content-Encoding sent.
// The MaxRequestBody bound applies to the request before compression.
func WithRequestCompression() ClientOption { return func(cc *clientConfig) { cc.compress = true } }

// NewClient returns a Client posting to endpoint over HTTP/2 when the
// receiver offers it by ALPN (requests in flight at once share one
// connection), HTTP/1.1 otherwise: an https URL, or an
// http URL whose host is a loopback address (127.0.0.0/8, [::1]) or
// localhost: a tunnel's or a local proxy's end on this machine, which
// carries the messages to the receiver and adds the credentials itself
// (SPEC.md §11.6). Over http the Client sends no credentials — a
// receiver answers 401 to an Authorization header without TLS (SPEC.md
// §11.2), and a client certificate needs TLS — and connects only to a
// loopback address, whatever localhost resolves to.
//
// It returns an error wrapping sourcecatalog.ErrInvalidValue for another
// URL, a bearer token or a TLS configuration with a client certificate
// given with an http URL, a TLS configuration allowing a version below
// 1.2, or a token that is not 1 to MaxTokenBytes bytes of RFC 6750's
// b64token; and, with WithHTTPClient, for WithTLSConfig given too, an
// http endpoint whose host is not a loopback address, or an
// *http.Transport whose TLSClientConfig sets a MinVersion below 1.2.
func NewClient(endpoint string, opts ...ClientOption) (*Client, error) {
	cfg := clientConfig{timeout: DefaultClientTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the endpoint must be an https URL (or http on loopback) without user or fragment")
	}
	plain := u.Scheme == "http"
	if plain && !loopbackHost(u.Hostname()) {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: an http endpoint must be on loopback (127.0.0.0/8, [::1] or localhost); use https")
	}
	if cfg.token != "" && !isB64Token(cfg.token) {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the bearer token is not 1 to 512 bytes of b64token")
	}
	if plain && cfg.token != "" {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: a bearer token is not sent over http (the receiver refuses it in clear); the local proxy adds the credentials")
	}
	if plain && cfg.tls != nil && (len(cfg.tls.Certificates) > 0 || cfg.tls.GetClientCertificate != nil) {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: a client certificate needs https; over http the local proxy adds the credentials")
	}
	if cfg.hc != nil {
		return callerClient(u, cfg)
	}
	tc := ClientTLSConfig(nil, nil)
	if cfg.tls != nil {
		if cfg.tls.MinVersion < tls.VersionTLS12 {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: TLS below 1.2 is not allowed; set MinVersion")
		}
		tc = cfg.tls.Clone()
	}
	tc.NextProtos = []string{"h2", "http/1.1"}
	timeout := orDefault(cfg.timeout, DefaultClientTimeout)
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true) // over TLS only
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer(timeout, plain).DialContext,
		TLSClientConfig:        tc,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		DisableCompression:     true,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		Protocols:              &protocols,
		HTTP2: &http.HTTP2Config{
			// A connection that carries every request in flight and
			// goes silent is found dead by a PING, not by each
			// request's timeout.
			SendPingTimeout: timeout,
			PingTimeout:     15 * time.Second,
		},
	}
	return &Client{
		endpoint: u.String(),
		token:    cfg.token,
		compress: cfg.compress,
		hc: &http.Client{
			Transport:     tr,
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// callerClient is NewClient over the caller's http.Client (WithHTTPClient).
func callerClient(u *url.URL, cfg clientConfig) (*Client, error) {
	if cfg.tls != nil {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: WithTLSConfig and WithHTTPClient exclude each other: the caller's transport holds the TLS configuration")
	}
	if a, err := netip.ParseAddr(u.Hostname()); u.Scheme == "http" && (err != nil || !a.IsLoopback()) {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: over http, a caller's http.Client needs a loopback address as the host (127.0.0.0/8 or [::1]), not a name")
	}
	rt := cfg.hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if tr, ok := rt.(*http.Transport); ok && tr.TLSClientConfig != nil && tr.TLSClientConfig.MinVersion != 0 && tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the caller's transport allows TLS below 1.2; set MinVersion")
	}
	timeout := orDefault(cfg.timeout, DefaultClientTimeout)
	if cfg.hc.Timeout > 0 {
		timeout = min(timeout, cfg.hc.Timeout)
	}
	return &Client{
		endpoint: u.String(),
		token:    cfg.token,
		compress: cfg.compress,
		checkTLS: u.Scheme == "https",
		hc: &http.Client{
			Transport:     rt,
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// do sends req. Over a caller's transport it refuses an https answer
// without TLS 1.2 or later, as a *TLSError.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil || !c.checkTLS {
		return resp, err
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		resp.Body.Close()
		return nil, &TLSError{Err: errors.New("the caller's transport reported no TLS 1.2 or later connection for an https URL")}
	}
	return resp, nil
}

// loopbackHost reports whether host, a URL's host name, is localhost or
// a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// dialer returns the Client's dialer; for plain http one that connects
// only to loopback addresses, so that a localhost resolved elsewhere is
// refused before a byte is sent.
func dialer(timeout time.Duration, plain bool) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if plain {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !ap.Addr().IsLoopback() {
				return fmt.Errorf("httpbinding: an http endpoint connects to loopback only, not %s", address)
			}
			return nil
		}
	}
	return d
}

// Send implements outbox.Transport: it posts e and returns the receiver's
// receipt, decoded strictly (the Publisher checks that it matches e).
//
// A refusal answer is returned as its class (envelope.Refusal.Err): a
// conflict wraps sourcecatalog.ErrConflict, which stops the snapshot. A
// 401 wraps ErrUnauthorized, and a TLS verification failure is a
// *TLSError (class sourcecatalog.ErrInvalidValue). Everything else wraps
// sourcecatalog.ErrStoreUnavailable, with the cause: a network failure or
// timeout, an answer cut short, an answer that is neither a receipt with
// 200 nor a refusal with a status its class allows (SPEC.md §11.3), or
// one over envelope.MaxAnswerSize bytes. An entry whose wrapped request
// exceeds MaxRequestBody is not sent (ErrLimitExceeded).
func (c *Client) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	rc, _, err := c.SendCounted(ctx, e)
	return rc, err
}

// SendCounted implements outbox.CountedTransport: it is Send, and also
// returns the bytes of the request body, counted for each time the
// transport reports it wrote the request whole (httptrace's WroteRequest
// without an error; a resend on a fresh connection counts again): Sent
// the body as sent (the gzip member when compressed), Uncompressed the
// wrapped request. A request the transport never wrote whole — no
// connection, a failed TLS handshake, a write cut midway — counts 0,
// unless an answer came back before any write was reported (a round
// tripper of WithHTTPClient that calls no httptrace hooks, or a receiver
// answering before it read the body), which counts once. Headers are not
// counted.
func (c *Client) SendCounted(ctx context.Context, e outbox.Entry) (envelope.Receipt, outbox.RequestBytes, error) {
	var n outbox.RequestBytes
	if g := c.gate.Load(); g != nil {
		if err := g.beforeSend(ctx); err != nil {
			return envelope.Receipt{}, n, err
		}
	}
	wrapped := envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)
	if len(wrapped) > MaxRequestBody {
		return envelope.Receipt{}, n, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the wrapped request is larger than 32768 bytes")
	}
	body, gzipped := wrapped, false
	if c.compress || c.declared.Load() {
		if z := gzipRequest(wrapped); len(z) < len(wrapped) {
			body, gzipped = z, true
		}
	}
	// writes counts the requests the transport wrote whole: the body once
	// more on each (a resend on a fresh connection too).
	var writes atomic.Int64
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			writes.Add(1)
		}
	}})
	req, err := c.newRequest(ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		return envelope.Receipt{}, n, err
	}
	req.Header.Set("Content-Type", ContentType)
	if gzipped {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.do(req)
	// counted counts the requests written whole so far; an answer from a
	// round tripper that reports no writes (no httptrace hooks) counts one.
	counted := func() outbox.RequestBytes {
		k := writes.Load()
		if k == 0 && resp != nil {
			k = 1
		}
		return outbox.RequestBytes{Sent: k * int64(len(body)), Uncompressed: k * int64(len(wrapped))}
	}
	if err != nil {
		return envelope.Receipt{}, counted(), transportErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return envelope.Receipt{}, counted(), fmt.Errorf("httpbinding: %w", ErrUnauthorized)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, envelope.MaxAnswerSize+1))
	if err != nil {
		err = transportErr(fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err))
	} else {
		var rc envelope.Receipt
		if rc, err = decodeAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), answer); err == nil {
			return rc, counted(), nil
		}
	}
	if noLongerAccepted(resp.StatusCode, err) {
		c.declared.Store(false) // no gzip on the strength of the old declaration
		c.downgrades.Add(1)
	}
	return envelope.Receipt{}, counted(), err
}

// noLongerAccepted reports whether an answer to a message says that the
// receiver no longer accepts what was sent (SPEC.md §11.7): 400 — a body
// it could not read, or a receiver of another protocol —, 404, 405 or
// 501 — no message route —, 415 — a media type or content coding it does
// not take —, or a refusal of class unsupported.
func noLongerAccepted(status int, err error) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType, http.StatusNotImplemented:
		return true
	}
	return errors.Is(err, sourcecatalog.ErrUnsupported)
}

// newRequest returns a request of method to the Client's endpoint, with
// its Accept and its credentials; its error wraps
// sourcecatalog.ErrStoreUnavailable.
func (c *Client) newRequest(ctx context.Context, method string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint, body)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
	}
	req.Header.Set("Accept", ContentType)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// transportErr classes an error of the connection: a *TLSError for a TLS
// verification failure, sourcecatalog.ErrStoreUnavailable otherwise.
func transportErr(err error) error {
	var own *TLSError
	if errors.As(err, &own) {
		return own
	}
	if tf := tlsFailure(err); tf != nil {
		return tf
	}
	return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
}

// decodeAnswer turns an answer into a receipt or a classed error.
func decodeAnswer(status int, contentType string, answer []byte) (envelope.Receipt, error) {
	switch {
	case len(answer) > envelope.MaxAnswerSize:
		return envelope.Receipt{}, badAnswer(status, "larger than envelope.MaxAnswerSize")
	case !isJSON(contentType):
		return envelope.Receipt{}, badAnswer(status, "not application/json")
	case status == http.StatusOK:
		rc, err := envelope.DecodeReceipt(answer)
		if err != nil {
			return envelope.Receipt{}, badAnswer(status, "not a receipt: "+err.Error())
		}
		return rc, nil
	}
	f, err := envelope.DecodeRefusal(answer)
	if err != nil {
		return envelope.Receipt{}, badAnswer(status, "not a refusal: "+err.Error())
	}
	if !statusAllowed(f.Class, status) {
		return envelope.Receipt{}, badAnswer(status, "a refusal of class "+sourcecatalog.WireName(f.Class)+" with another status")
	}
	return envelope.Receipt{}, f.Err()
}

// badAnswer is the error of an answer that breaks the binding. It wraps
// only ErrStoreUnavailable: a decoding error of the answer is described,
// not wrapped, so that the error has one class.
func badAnswer(status int, why string) error {
	if len(why) > 200 {
		why = why[:200]
	}
	return sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, fmt.Sprintf("httpbinding: answer %d %s", status, why))
}

// CloseIdleConnections closes the connections kept alive for later Sends.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }
