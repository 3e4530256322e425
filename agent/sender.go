package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A Gate says when v2 entries may be sent (SPEC.md §7.5): Config.Gate.
type Gate int

const (
	// GateAuto, the default, reads the receiver's capability declaration
	// (a GET on Config.URL, SPEC.md §11.7) before a publishing step —
	// reusing it for the max-age the receiver states, unless an answer
	// refuses what was sent (httpbinding.Gate) — and sends only while it
	// declares protocol v2; it also gzips the
	// requests when the receiver declares request_gzip (SPEC.md §11.1)
	// and sends chunk references when it declares chunk_reference
	// (SPEC.md §6.6). A receiver that answers no declaration, as the
	// installed v1 receiver, is sent nothing.
	GateAuto Gate = iota
	// GateOff sends nothing: cycles are committed and wait in the outbox.
	GateOff
	// GateOn is the operator's declaration that the receiver supports
	// v2: entries are sent whole and uncompressed, as to a receiver that
	// declares no optional capability.
	GateOn
)

// A Sender commits a vessel's discovery cycles to its outbox and publishes
// them to the receiver: what a boat program needs, built from a Config by
// NewSender. It is safe for concurrent use.
type Sender struct {
	cfg       Config
	writer    *outbox.Writer
	publisher *outbox.Publisher
	client    *httpbinding.Client // nil over Config.Transport
}

// NewSender returns the Sender cfg describes; it uses Vessel, Store, the
// receiver (URL and credentials, or Transport), Gate, Publisher, Build
// and Clock, and ignores the loop's members (Discoverer, Interval,
// Logger). It reads
// the credential files once, now. Over the Client it builds from URL its
// Publisher keeps httpbinding.DefaultMaxInFlight entries in flight
// (outbox.WithInFlight) unless Config.Publisher sets the number.
//
// It returns an error wrapping sourcecatalog.ErrInvalidValue, located at
// the Config field at fault (sourcecatalog.Error.Field), when: Vessel is
// nil; Store is nil; URL is empty without a Transport, or given with one;
// Transport is given with any credential, HTTPClient or Timeout; TokenFile
// is given with CertFile or KeyFile; CertFile is given without KeyFile or
// the reverse; HTTPClient is given with CertFile, KeyFile or CAFile (the
// caller's transport holds TLS); Timeout is negative; Gate is not one of
// the constants, or GateAuto over a Transport that is no
// *httpbinding.Client; a credential file cannot be read or holds no
// credential; or httpbinding.NewClient refuses URL (located at "URL").
func NewSender(cfg Config) (*Sender, error) {
	if err := cfg.checkSender(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = outbox.SystemClock{}
	}
	s := &Sender{cfg: cfg, writer: outbox.NewWriter(cfg.Store, outbox.WithBuildOptions(cfg.Build...))}
	transport := cfg.Transport
	if transport == nil {
		c, err := cfg.client()
		if err != nil {
			return nil, err
		}
		s.client, transport = c, c
	}
	var gate outbox.PublisherOption
	switch c, _ := transport.(*httpbinding.Client); {
	case cfg.Gate == GateOn:
		gate = outbox.WithReceiverV2(true)
	case cfg.Gate == GateOff:
		gate = outbox.WithReceiverV2(false)
	default:
		gate = outbox.WithGate(httpbinding.NewGate(c))
	}
	opts := []outbox.PublisherOption{gate}
	if s.client != nil {
		// Its own Client: as many in flight as the receiver's default
		// limit, unless cfg.Publisher, applied after, says otherwise.
		opts = append(opts, outbox.WithInFlight(httpbinding.DefaultMaxInFlight))
	}
	s.publisher = outbox.NewPublisher(cfg.Store, cfg.Vessel, transport, append(opts, cfg.Publisher...)...)
	return s, nil
}

// invalidField is the error of NewSender and New for the Config field at
// fault.
func invalidField(field, detail string) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "agent: "+detail).AtField(field)
}

// checkSender checks the members NewSender uses.
func (cfg *Config) checkSender() error {
	creds := cfg.CertFile != "" || cfg.KeyFile != "" || cfg.TokenFile != "" || cfg.CAFile != ""
	_, httpClient := cfg.Transport.(*httpbinding.Client)
	switch {
	case cfg.Vessel == [16]byte{}:
		return invalidField("Vessel", "the vessel id is required")
	case cfg.Store == nil:
		return invalidField("Store", "an outbox Store is required")
	case cfg.URL == "" && cfg.Transport == nil:
		return invalidField("URL", "the receiver's URL is required")
	case cfg.URL != "" && cfg.Transport != nil:
		return invalidField("Transport", "Transport and URL exclude each other: give one receiver")
	case cfg.Transport != nil && (creds || cfg.HTTPClient != nil || cfg.Timeout != 0):
		return invalidField("Transport", "a Transport holds its own credentials and settings: give no CertFile, KeyFile, TokenFile, CAFile, HTTPClient or Timeout with it")
	case cfg.TokenFile != "" && (cfg.CertFile != "" || cfg.KeyFile != ""):
		return invalidField("TokenFile", "TokenFile and CertFile/KeyFile exclude each other: give one kind of credentials")
	case cfg.CertFile != "" && cfg.KeyFile == "":
		return invalidField("KeyFile", "CertFile needs KeyFile")
	case cfg.KeyFile != "" && cfg.CertFile == "":
		return invalidField("CertFile", "KeyFile needs CertFile")
	case cfg.HTTPClient != nil && (cfg.CertFile != "" || cfg.CAFile != ""):
		return invalidField("HTTPClient", "HTTPClient holds the TLS configuration: give no CertFile, KeyFile or CAFile with it")
	case cfg.Timeout < 0:
		return invalidField("Timeout", "the timeout is negative")
	case cfg.Gate < GateAuto || cfg.Gate > GateOn:
		return invalidField("Gate", fmt.Sprintf("no gate %d: use GateAuto, GateOff or GateOn", cfg.Gate))
	case cfg.Gate == GateAuto && cfg.Transport != nil && !httpClient:
		return invalidField("Gate", "GateAuto reads the receiver's declaration over an *httpbinding.Client: with another Transport set GateOn or GateOff")
	}
	return nil
}

// client returns the httpbinding.Client of the URL and credentials.
func (cfg *Config) client() (*httpbinding.Client, error) {
	opts := []httpbinding.ClientOption{httpbinding.WithTimeout(cfg.Timeout)}
	if cfg.HTTPClient != nil {
		opts = append(opts, httpbinding.WithHTTPClient(cfg.HTTPClient))
	} else {
		var roots *x509.CertPool
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fileErr("CAFile", err)
			}
			roots = x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pem) {
				return nil, invalidField("CAFile", "no PEM certificate in "+cfg.CAFile)
			}
		}
		var cert *tls.Certificate
		if cfg.CertFile != "" {
			c, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
			if err != nil {
				return nil, fileErr("CertFile", err)
			}
			cert = &c
		}
		opts = append(opts, httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(roots, cert)))
	}
	field := "URL" // the field a refusal of NewClient is located at
	if cfg.TokenFile != "" {
		token, err := readToken(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		if c, err := httpbinding.NewClient(cfg.URL, opts...); err == nil {
			c.CloseIdleConnections()
			field = "TokenFile" // the URL is good: a refusal is the token's
		}
		opts = append(opts, httpbinding.WithBearerToken(token))
	}
	c, err := httpbinding.NewClient(cfg.URL, opts...)
	var se *sourcecatalog.Error
	if errors.As(err, &se) {
		return nil, se.AtField(field)
	}
	return c, err
}

// fileErr is the error of a credential file that cannot be used.
func fileErr(field string, err error) error {
	return sourcecatalog.Wrap(sourcecatalog.ErrInvalidValue, err).AtField(field)
}

// readToken reads the first line of a token file, without its
// surrounding white space. Its errors never hold the file's bytes.
func readToken(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", fileErr("TokenFile", err)
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, 4096))
	if err != nil {
		return "", fileErr("TokenFile", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	token := strings.TrimSpace(line)
	if token == "" {
		return "", invalidField("TokenFile", path+" holds no token on its first line")
	}
	return token, nil
}

// Commit commits records as one discovery cycle of the vessel, discovered
// now (Config.Clock), to the outbox in one transaction (SPEC.md §7.4):
// outbox.Writer.Commit, with its errors.
func (s *Sender) Commit(ctx context.Context, records []*catalog.Record) (outbox.Commit, error) {
	return s.writer.Commit(ctx, outbox.NewCycle(s.cfg.Vessel, s.cfg.Clock.Now(), records))
}

// A Report says what Publish did.
type Report struct {
	// DrainReport sums every pass, over the drains of a Publish: the
	// entries sent, delivered, sent by reference (Referenced) and
	// delivered by a manifest index without being sent (Indexed), and the
	// request bytes as sent and uncompressed (Bytes).
	outbox.DrainReport
	// Pending is the number of the vessel's entries pending when Publish
	// returned, counted after its last pass; -1 when the store could not
	// count them (the error says why).
	Pending int
}

// Publish drains the outbox to the receiver: outbox.Publisher.Drain with
// opts (opts.Clock defaults to Config.Clock), and after each drain a count
// of the pending entries (outbox.CountPending, which reads none of them). Entries committed
// meanwhile — after the drain's last pass — are drained again, until a
// count finds none, the context ends or opts.Until passes.
//
// The error is nil exactly when Pending is 0 and Outcome is outbox.Drained
// or outbox.DrainStopped. Otherwise it is Drain's error, or, when
// entries committed meanwhile are still pending at the end, an error
// wrapping sourcecatalog.ErrStoreUnavailable and ctx's error, or
// context.DeadlineExceeded when opts.Until passed (Outcome
// outbox.DrainGaveUp), or the store's error counting them,
// wrapping sourcecatalog.ErrStoreUnavailable (Pending -1).
func (s *Sender) Publish(ctx context.Context, opts outbox.DrainOptions) (Report, error) {
	if opts.Clock == nil {
		opts.Clock = s.cfg.Clock
	}
	var rep Report
	for {
		dr, err := s.publisher.Drain(ctx, opts)
		rep.add(dr)
		n, cerr := s.pending(ctx)
		rep.Pending = n
		switch {
		case err != nil:
			return rep, err
		case cerr != nil:
			return rep, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("agent: counting the pending entries: %w", cerr))
		case n == 0:
			return rep, nil
		case ctx.Err() != nil || (!opts.Until.IsZero() && !opts.Clock.Now().Before(opts.Until)):
			rep.Outcome = outbox.DrainGaveUp
			cause := ctx.Err()
			if cause == nil {
				cause = context.DeadlineExceeded
			}
			return rep, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable,
				fmt.Errorf("%d entries committed during the drain still pending: %w", n, cause))
		}
	}
}

// add sums the drain d into r.
func (r *Report) add(d outbox.DrainReport) {
	if r.Passes == 0 && r.Outcome == "" {
		r.DrainReport = d
		return
	}
	r.Passes += d.Passes
	r.Sent += d.Sent
	r.Delivered += d.Delivered
	r.AlreadyReceived += d.AlreadyReceived
	r.Failed += d.Failed
	r.Referenced += d.Referenced
	r.SentWhole += d.SentWhole
	r.Indexed += d.Indexed
	r.Bytes.Sent += d.Bytes.Sent
	r.Bytes.Uncompressed += d.Bytes.Uncompressed
	r.Stopped = append(r.Stopped, d.Stopped...)
	r.Outcome = d.Outcome
	if r.Outcome == outbox.Drained && len(r.Stopped) > 0 {
		r.Outcome = outbox.DrainStopped
	}
	if d.Last != nil {
		r.Last = d.Last
	}
	if d.Declared != "" {
		r.Declared = d.Declared
	}
}

// pending counts the vessel's pending entries, or returns -1 and the
// store's error. It counts even after ctx ended, within a bound of its
// own.
func (s *Sender) pending(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	n := 0
	err := s.cfg.Store.WithVessel(cctx, s.cfg.Vessel, func(tx outbox.Tx) error {
		var err error
		n, err = outbox.CountPending(cctx, tx)
		return err
	})
	if err != nil {
		return -1, err
	}
	return n, nil
}

// Close closes the connections the Sender keeps alive to the receiver,
// those of a client it built itself: with Config.HTTPClient the idle
// connections are the caller's transport's, left to the caller.
func (s *Sender) Close() {
	if s.client != nil && s.cfg.HTTPClient == nil {
		s.client.CloseIdleConnections()
	}
}
