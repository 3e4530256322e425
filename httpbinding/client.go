package httpbinding

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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
// sourcecatalog.ErrStoreUnavailable, so the Publisher keeps the entry
// pending; alert an operator, since resending will not help.
var ErrUnauthorized error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable,
	"the receiver refused the credentials (401)")

// A Client is the sender side of the binding (SPEC.md §11.6): an
// outbox.Transport that POSTs each entry, wrapped with
// envelope.DefaultWrapper, to one URL. It is safe for concurrent use.
type Client struct {
	endpoint string
	token    string
	hc       *http.Client
}

var _ outbox.Transport = (*Client)(nil)

type clientConfig struct {
	tls     *tls.Config
	token   string
	timeout time.Duration
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

// NewClient returns a Client posting to endpoint, an https URL. It returns
// an error wrapping sourcecatalog.ErrInvalidValue for another URL, a TLS
// configuration allowing a version below 1.2, or a token that is not 1 to
// MaxTokenBytes bytes of RFC 6750's b64token.
func NewClient(endpoint string, opts ...ClientOption) (*Client, error) {
	cfg := clientConfig{timeout: DefaultClientTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the endpoint must be an https URL without user or fragment")
	}
	if cfg.token != "" && !isB64Token(cfg.token) {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the bearer token is not 1 to 512 bytes of b64token")
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
		DialContext:            (&net.Dialer{Timeout: timeout}).DialContext,
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
		hc: &http.Client{
			Transport:     tr,
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Send implements outbox.Transport: it posts e and returns the receiver's
// receipt, decoded strictly (the Publisher checks that it matches e).
//
// A refusal answer is returned as its class (envelope.Refusal.Err): a
// conflict wraps sourcecatalog.ErrConflict, which stops the snapshot. A
// 401 wraps ErrUnauthorized. Everything else wraps
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return envelope.Receipt{}, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", ContentType)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return envelope.Receipt{}, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return envelope.Receipt{}, fmt.Errorf("httpbinding: %w", ErrUnauthorized)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, envelope.MaxAnswerSize+1))
	if err != nil {
		return envelope.Receipt{}, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err))
	}
	return decodeAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), answer)
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
