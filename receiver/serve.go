package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// shutdownTimeout bounds how long Serve lets the requests in flight
// finish once its ctx is done.
const shutdownTimeout = 30 * time.Second

// Serve serves the message route on ln — over TLS with Config.TLS
// (httpbinding.NewServer), else plain HTTP (httpbinding.NewInsecureServer)
// — and, when admin is not nil, the admin routes on admin over plain
// HTTP, and runs the reconciler, until ctx is done or a server fails.
// Then it stops accepting, lets the requests in flight finish within
// shutdownTimeout (closing what is left after it), and stops the
// reconciler. It returns nil after a clean stop on ctx, and otherwise
// the failure. It closes ln and admin; the store stays open until Close.
//
// A nil ln is an error wrapping sourcecatalog.ErrInvalidValue (admin is
// closed then too).
func (s *Service) Serve(ctx context.Context, ln, admin net.Listener) error {
	if ln == nil {
		return errors.Join(sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "receiver: Serve needs a listener for the message route").AtField("ln"), closeIf(admin))
	}
	log := s.log.Logger
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	var srv *http.Server
	if s.cfg.TLS != nil {
		var err error
		if srv, err = httpbinding.NewServer("", s.handler, s.cfg.TLS, httpbinding.Timeouts{}, errorLog); err != nil {
			return errors.Join(err, ln.Close(), closeIf(admin))
		}
	} else {
		srv = httpbinding.NewInsecureServer("", s.handler, httpbinding.Timeouts{}, errorLog)
	}
	servers, serving := []*http.Server{srv}, make(chan error, 2)
	go func() { serving <- serveOn(srv, ln, s.cfg.TLS != nil) }()
	if admin != nil {
		a := &http.Server{
			Handler: s.admin, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
			MaxHeaderBytes: httpbinding.MaxHeaderBytes, ErrorLog: errorLog,
		}
		servers = append(servers, a)
		go func() { serving <- serveOn(a, admin, false) }()
	}
	reconcileCtx, stopReconciler := context.WithCancel(context.WithoutCancel(ctx))
	var reconciling sync.WaitGroup
	reconciling.Go(func() { _ = s.Run(reconcileCtx) }) // failures go to the observer
	var failed error
	running := len(servers)
	select {
	case <-ctx.Done():
		log.Info("shutting down", "cause", context.Cause(ctx).Error())
	case failed = <-serving:
		running--
		log.Error("serving failed; shutting down", "err", failed)
	}
	if err := shutdown(log, servers); err != nil {
		failed = errors.Join(failed, err)
	}
	for ; running > 0; running-- { // every server has returned, its listener closed
		if err := <-serving; err != nil {
			failed = errors.Join(failed, err)
		}
	}
	stopReconciler()
	reconciling.Wait()
	return failed
}

func closeIf(ln net.Listener) error {
	if ln == nil {
		return nil
	}
	return ln.Close()
}

// serveOn serves srv on ln until it is shut down, when it returns nil.
func serveOn(srv *http.Server, ln net.Listener, useTLS bool) error {
	var err error
	if useTLS {
		err = srv.ServeTLS(ln, "", "") // the certificate is in srv.TLSConfig
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// shutdown stops the servers gracefully within shutdownTimeout, closing
// what is left after it, and returns an error when a server did not stop
// in time.
func shutdown(log *slog.Logger, servers []*http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var unclean error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			log.Error("requests still in flight at the shutdown bound; closing their connections", "err", err, "bound", shutdownTimeout.String())
			srv.Close()
			unclean = fmt.Errorf("receiver: requests still in flight after %v: %w", shutdownTimeout, err)
		}
	}
	return unclean
}
