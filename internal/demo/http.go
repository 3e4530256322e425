package demo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/faultproxy"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// HTTPLink describes the demo's publishing through the HTTP binding
// (SPEC.md §11): an httpbinding server on a loopback port with mutual TLS,
// and a fault proxy in front of it (package faultproxy) that breaks some
// answers after the server handled their request. Each probability
// applies to one answer; their sum is at most 1.
type HTTPLink struct {
	// Reset is the probability that the proxy resets the connection
	// instead of relaying the answer: the receipt is lost.
	Reset float64
	// Cut is the probability that the proxy relays half of the answer and
	// hangs up: the sender reads a receipt cut short.
	Cut float64
	// Delay is the probability that the proxy holds the answer back for
	// DelayFor: longer than Timeout, the sender gives up on it.
	Delay    float64
	DelayFor time.Duration
	// Timeout bounds one send, the answer included (0 means
	// httpbinding.DefaultClientTimeout).
	Timeout time.Duration
}

// DefaultHTTP loses about a third of the receipts, half of them to a
// reset and half cut midway, and delays a sixth by 20 ms.
var DefaultHTTP = HTTPLink{Reset: 0.15, Cut: 0.15, Delay: 0.15, DelayFor: 20 * time.Millisecond, Timeout: 10 * time.Second}

func (h HTTPLink) String() string {
	return fmt.Sprintf("HTTPS with mutual TLS on 127.0.0.1 through a fault proxy that resets %s of the connections after the server answered, cuts %s of the answers midway and delays %s by %s",
		percent(h.Reset), percent(h.Cut), percent(h.Delay), h.DelayFor)
}

// httpLink is an outbox.Transport that publishes through an
// httpbinding.Client, a fault proxy and an httpbinding server over the
// demo's receiver. The server's observer counts the answers.
type httpLink struct {
	client     *httpbinding.Client
	proxy      *faultproxy.Proxy
	srv        *http.Server
	served     chan error // ServeTLS's return
	serverAddr string
	// declared is the server's capability declaration (SPEC.md §11.7),
	// which the sender follows as --receiver-v2=auto does: bodies gzipped
	// and unchanged chunks sent by reference.
	declared httpbinding.Declaration

	whole map[string]int64 // by entity key: the request of the entry whole and uncompressed

	mu    sync.Mutex
	stats LinkStats
	err   error // the first refusal the server answered
}

var _ carrier = (*httpLink)(nil)

// startHTTP starts the server over recv on a loopback port and the proxy
// in front of it, with certificates made for the run: a CA, the server's
// for 127.0.0.1 and the vessel's client certificate. The proxy's faults
// are drawn from seed.
func startHTTP(cfg HTTPLink, seed uint64, recv *finalize.Receiver, vessel uuid.UUID) (l *httpLink, err error) {
	ca, err := testpki.NewCA("sourcecatalog demo CA")
	if err != nil {
		return nil, err
	}
	serverCert, err := ca.Server()
	if err != nil {
		return nil, err
	}
	vesselCert, err := ca.Vessel(vessel)
	if err != nil {
		return nil, err
	}
	l = &httpLink{served: make(chan error, 1)}
	h := httpbinding.NewHandler(recv, httpbinding.MutualTLS{ClientCAs: ca.Pool}, httpbinding.WithChunkReferences(true), httpbinding.WithObserver(l.observe))
	tc := httpbinding.ServerTLSConfig(serverCert, ca.Pool)
	tc.MaxVersion = tls.VersionTLS12 // the proxy reads TLS 1.2 records
	// The proxy's resets and cuts are logged as failed writes: not news.
	if l.srv, err = httpbinding.NewServer("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.ContentLength > 0 {
			l.mu.Lock()
			l.stats.BodyBytes += r.ContentLength
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}), tc, httpbinding.Timeouts{}, log.New(io.Discard, "", 0)); err != nil {
		return nil, err
	}
	// The proxy takes each TLS record of the sender for a request: HTTP/1.1
	// only, as HTTP/2's SETTINGS, PING and WINDOW_UPDATE are records too.
	l.srv.Protocols = new(http.Protocols)
	l.srv.Protocols.SetHTTP1(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	l.serverAddr = ln.Addr().String()
	go func() { l.served <- l.srv.ServeTLS(ln, "", "") }()
	defer func() {
		if err != nil {
			err = errors.Join(err, l.close())
		}
	}()
	l.proxy, err = faultproxy.Start(faultproxy.Config{
		Target: ln.Addr().String(), Seed: seed,
		Reset: cfg.Reset, Cut: cfg.Cut, Delay: cfg.Delay, DelayFor: cfg.DelayFor,
	})
	if err != nil {
		return l, fmt.Errorf("demo: %w", err)
	}
	// The declaration is read from the server itself, not through the
	// proxy, so that the proxy's faults fall on the messages alone.
	opts := []httpbinding.ClientOption{
		httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(ca.Pool, &vesselCert)),
		httpbinding.WithTimeout(cfg.Timeout),
	}
	direct, err := httpbinding.NewClient("https://"+l.serverAddr+"/v2/messages", opts...)
	if err != nil {
		return l, err
	}
	defer direct.CloseIdleConnections()
	if l.declared, err = direct.Declaration(context.Background()); err != nil {
		return l, fmt.Errorf("demo: the capability declaration: %w", err)
	}
	if l.declared.Has(httpbinding.CapabilityRequestGzip) {
		opts = append(opts, httpbinding.WithRequestCompression())
	}
	l.client, err = httpbinding.NewClient("https://"+l.proxy.Addr()+"/v2/messages", opts...)
	return l, err
}

// publisherOptions are the Publisher's options for what the server
// declared: the gate open, references when it takes them.
func (l *httpLink) publisherOptions() []outbox.PublisherOption {
	return []outbox.PublisherOption{
		outbox.WithReceiverV2(l.declared.V2()),
		outbox.WithChunkReferences(l.declared.Has(httpbinding.CapabilityChunkReference)),
	}
}

// expect notes the size of each entry's request whole and uncompressed,
// for the requests that send it (LinkStats.WholeBytes).
func (l *httpLink) expect(entries []outbox.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.whole == nil {
		l.whole = map[string]int64{}
	}
	for _, e := range entries {
		l.whole[e.EntityKey] = int64(len(envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)))
	}
}

// Send implements outbox.Transport.
func (l *httpLink) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	l.mu.Lock()
	l.stats.Sent++
	l.stats.WholeBytes += l.whole[e.EntityKey] // a reference's key is its chunk's
	l.mu.Unlock()
	return l.client.Send(ctx, e)
}

// observe counts the server's answers and activations. The Handler calls
// it before the answer leaves, so the counts are complete when a Send
// returns.
func (l *httpLink) observe(e httpbinding.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Kind {
	case httpbinding.EventMessage:
		if e.Outcome == httpbinding.OutcomeDeclaration {
			return // the GET of startHTTP
		}
		l.stats.Deliveries++
		switch {
		case e.Outcome == string(envelope.Staged):
			l.stats.Staged++
		case e.Outcome == string(envelope.AlreadyReceived):
			l.stats.AlreadyReceived++
		case l.err == nil:
			l.err = fmt.Errorf("the server answered %d %s: %v", e.Status, e.Outcome, e.Err)
		}
	case httpbinding.EventFinalize:
		if e.Finalize != nil && e.Finalize.Status == finalize.Activated {
			l.stats.ServerActivations++
		}
	}
}

// snapshot returns the counts, the proxy's with them, and the first
// refusal.
func (l *httpLink) snapshot() (LinkStats, error) {
	c := l.proxy.Counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Resets, s.Cuts, s.Delays = c.Resets, c.Cuts, c.Delays
	return s, l.err
}

// flush does nothing: the binding holds nothing back.
func (l *httpLink) flush(context.Context) {}

// close stops the client, the proxy and the server, letting a request in
// flight end.
func (l *httpLink) close() error {
	if l.client != nil {
		l.client.CloseIdleConnections()
	}
	var errs []error
	if l.proxy != nil {
		errs = append(errs, l.proxy.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("demo: shutting the server down: %w", err), l.srv.Close())
	}
	if err := <-l.served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("demo: the server: %w", err))
	}
	return errors.Join(errs...)
}
