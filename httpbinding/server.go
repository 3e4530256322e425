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
// slack).
const MaxHeaderBytes = 16 << 10

// NewServer returns an http.Server for h hardened for the open network:
// TLS (tlsConfig, TLS 1.2 at least, HTTP/1.1 only), the timeouts t (zero
// fields from DefaultTimeouts), MaxHeaderBytes, no answer of its own to
// OPTIONS * (the Handler answers it 405, as any method but POST), and
// errors logged to errorLog (the standard logger when nil). Serve it with
// srv.ServeTLS(listener, "", "") or srv.ListenAndServeTLS("", "").
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
	srv.TLSConfig = tlsConfig.Clone()
	srv.TLSConfig.NextProtos = []string{"http/1.1"}
	return srv, nil
}

// NewInsecureServer returns an http.Server for h with NewServer's bounds
// but plain HTTP: for a Handler built with InsecureNoAuth or TrustedProxy, on loopback or
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
