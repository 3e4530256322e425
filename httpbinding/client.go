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
	hc       *http.Client
}

var _ outbox.Transport = (*Client)(nil)

type clientConfig struct {
	tls      *tls.Config
	token    string
	timeout  time.Duration
	compress bool
}

// A ClientOption configures a Client.
type ClientOption func(*clientConfig)

// WithTLSConfig sets the client's TLS configuration, such as one from
// ClientTLSConfig with the operator's CA and the vessel's certificate
// (default: TLS 1.2 at least, system roots, no client certificate).
func WithTLSConfig(c *tls.Config) ClientOption { return func(cc *clientConfig) { cc.tls = c } }

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

// NewClient returns a Client posting to endpoint, an https URL, or an
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
// b64token.
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
	tc := ClientTLSConfig(nil, nil)
	if cfg.tls != nil {
		if cfg.tls.MinVersion < tls.VersionTLS12 {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: TLS below 1.2 is not allowed; set MinVersion")
		}
		tc = cfg.tls.Clone()
		tc.NextProtos = []string{"http/1.1"}
	}
	timeout := orDefault(cfg.timeout, DefaultClientTimeout)
	var protocols http.Protocols
	protocols.SetHTTP1(true)
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
	body := envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)
	if len(body) > MaxRequestBody {
		return envelope.Receipt{}, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the wrapped request is larger than 32768 bytes")
	}
	gzipped := false
	if c.compress || c.declared.Load() {
		if z := gzipRequest(body); len(z) < len(body) {
			body, gzipped = z, true
		}
	}
	req, err := c.newRequest(ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		return envelope.Receipt{}, err
	}
	req.Header.Set("Content-Type", ContentType)
	if gzipped {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return envelope.Receipt{}, transportErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return envelope.Receipt{}, fmt.Errorf("httpbinding: %w", ErrUnauthorized)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, envelope.MaxAnswerSize+1))
	if err != nil {
		return envelope.Receipt{}, transportErr(fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err))
	}
	return decodeAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), answer)
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
