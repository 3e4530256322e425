package httpbinding

import (
	"crypto/tls"
	"log"
	"net/http"
	"time"

	"github.com/yachtmemory/sourcecatalog"
)

// Timeouts bound the phases of a connection (net/http's fields of the same
// names). A zero field takes its default.
type Timeouts struct {
	// ReadHeader bounds the TLS handshake and the request's headers.
	ReadHeader time.Duration
	// Read bounds the handshake, headers and body: a sender that stalls or
	// trickles is cut.
	Read time.Duration
	// Write bounds the handling and the answer, Finalize after a complete
	// receipt included: keep it above the Handler's receive and finalize
	// timeouts together.
	Write time.Duration
	// Idle bounds how long a kept-alive connection waits for its next
	// request.
	Idle time.Duration
}

// DefaultTimeouts suit one request of at most 32,768 bytes over a slow
// link, and a Finalize of a maximal snapshot.
var DefaultTimeouts = Timeouts{
	ReadHeader: 10 * time.Second,
	Read:       60 * time.Second,
	Write:      DefaultReceiveTimeout + DefaultFinalizeTimeout + 10*time.Second,
	Idle:       120 * time.Second,
}

// MaxHeaderBytes bounds a request's header (net/http adds 4,096 bytes of
// slack); under HTTP/2 it bounds the decoded header list (net/http adds
// 320 bytes of slack for the per-field overhead HTTP/2 counts).
const MaxHeaderBytes = 16 << 10

// maxConcurrentStreams bounds the requests one HTTP/2 connection carries
// at once: the Handler's default limit per vessel (DefaultMaxInFlight)
// and two more, so that a vessel at its limit, a health probe and a
// capability fetch share one connection, while a connection that opens
// more is refused streams by the protocol, not served handlers.
const maxConcurrentStreams = 16

// http2Config returns the HTTP/2 bounds of NewServer (SPEC.md §11.5):
// each is set, none left to net/http's defaults.
func http2Config(write time.Duration) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams: maxConcurrentStreams,
		// The smallest frame HTTP/2 allows: a body is at most 32 KiB.
		MaxReadFrameSize: 16 << 10,
		// HPACK's dynamic tables at the protocol's initial 4 KiB.
		MaxDecoderHeaderTableSize: 4 << 10,
		MaxEncoderHeaderTableSize: 4 << 10,
		// A whole body in one round trip: the flow-control window of a
		// stream covers the 32 KiB cap and its one byte more; the
		// connection's covers every stream at once.
		MaxReceiveBufferPerStream:     64 << 10,
		MaxReceiveBufferPerConnection: maxConcurrentStreams * 64 << 10,
		// A peer that stops reading the answers is cut.
		WriteByteTimeout: write,
	}
}

// NewServer returns an http.Server for h hardened for the open network:
// TLS (tlsConfig, TLS 1.2 at least, HTTP/2 and HTTP/1.1 by ALPN), the
// timeouts t (zero fields from DefaultTimeouts), MaxHeaderBytes, no answer of its own to
// OPTIONS * (the Handler answers it 405, as any method but POST), and
// errors logged to errorLog (the standard logger when nil). Serve it with
// srv.ServeTLS(listener, "", "") or srv.ListenAndServeTLS("", "").
//
// Under HTTP/2 (SPEC.md §11.5) the same bounds hold per stream: t.Read
// bounds a request from its headers to the end of its body, t.Write its
// answer, and the Handler's body cap and limit per vessel apply to each
// stream; a connection carries at most 16 requests at
// once (16), reads frames of at most 16 KiB, keeps HPACK tables of 4 KiB, and
// decodes a header list of at most MaxHeaderBytes (a longer one is
// answered 431 without reaching h). A connection without a stream is
// cut after t.Idle.
//
// It returns an error wrapping sourcecatalog.ErrInvalidValue when
// tlsConfig is nil, has no certificate (nor GetCertificate), or allows a
// version below TLS 1.2. tlsConfig is cloned, not kept.
func NewServer(addr string, h http.Handler, tlsConfig *tls.Config, t Timeouts, errorLog *log.Logger) (*http.Server, error) {
	switch {
	case tlsConfig == nil:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the server needs TLS")
	case len(tlsConfig.Certificates) == 0 && tlsConfig.GetCertificate == nil && tlsConfig.GetConfigForClient == nil:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: the TLS configuration has no certificate")
	case tlsConfig.MinVersion < tls.VersionTLS12:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: TLS below 1.2 is not allowed; set MinVersion")
	}
	srv := newHTTP1Server(addr, h, t, errorLog)
	srv.Protocols.SetHTTP2(true)
	srv.HTTP2 = http2Config(srv.WriteTimeout)
	srv.TLSConfig = tlsConfig.Clone()
	srv.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
	return srv, nil
}

// NewInsecureServer returns an http.Server for h with NewServer's bounds
// but plain HTTP/1.1 (no unencrypted HTTP/2): for a Handler built with InsecureNoAuth or TrustedProxy, on loopback or
// behind a proxy that terminates TLS and authenticates. Serve it with
// srv.Serve(listener) or srv.ListenAndServe().
func NewInsecureServer(addr string, h http.Handler, t Timeouts, errorLog *log.Logger) *http.Server {
	return newHTTP1Server(addr, h, t, errorLog)
}

// newHTTP1Server returns the server NewServer and NewInsecureServer
// share, without TLS.
func newHTTP1Server(addr string, h http.Handler, t Timeouts, errorLog *log.Logger) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: orDefault(t.ReadHeader, DefaultTimeouts.ReadHeader),
		ReadTimeout:       orDefault(t.Read, DefaultTimeouts.Read),
		WriteTimeout:      orDefault(t.Write, DefaultTimeouts.Write),
		IdleTimeout:       orDefault(t.Idle, DefaultTimeouts.Idle),
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errorLog,

		DisableGeneralOptionsHandler: true,
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
