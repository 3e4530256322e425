package fleetfloor

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// Main runs a floor server with the command line args until SIGTERM or
// SIGINT, logging in JSON to stderr, and returns the exit status: 0 after
// a clean shutdown, 1 when it cannot start or stops uncleanly, 2 for a
// usage error.
//
//	--listen ADDR          the HTTPS listener (port 0 picks one; the log
//	                       line "listening" has the address bound)
//	--tls-cert, --tls-key  the server's certificate and key, PEM
//	--tokens FILE          the token file, as serve's
//	--append FILE          the Sink: append to FILE (created), fdatasync
//	--mysql DSN            the Sink: a MariaDB database (go-sql-driver DSN)
//	--inventory KIND       also the Inventory: sqlite:FILE (created with
//	                       sqlitestore's schema), or mysql (with --mysql)
//	--records N            records of a snapshot (examples.Scaled(N)), for
//	                       the inventory rows (default 1500)
//	--messages N           messages of a snapshot (default 16)
func Main(args []string, stderr io.Writer) int {
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	fs := flag.NewFlagSet("fleetfloor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "")
	certFile, keyFile := fs.String("tls-cert", "", ""), fs.String("tls-key", "", "")
	tokensFile := fs.String("tokens", "", "")
	appendFile, dsn := fs.String("append", "", ""), fs.String("mysql", "", "")
	inventory := fs.String("inventory", "", "")
	records, messages := fs.Int("records", 1500, ""), fs.Int("messages", 16, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *certFile == "" || *keyFile == "" || *tokensFile == "" ||
		(*appendFile == "") == (*dsn == "") || *messages < 1 {
		fmt.Fprintln(stderr, "usage: fleetfloor --tls-cert FILE --tls-key FILE --tokens FILE (--append FILE | --mysql DSN) [--inventory sqlite:FILE|mysql] [--listen ADDR] [--records N] [--messages N]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	h, closeAll, err := open(ctx, *tokensFile, *appendFile, *dsn, *inventory, *records, *messages)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	defer closeAll()
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	srv, err := httpbinding.NewServer("", h, httpbinding.ServerTLSConfig(cert, nil), httpbinding.Timeouts{},
		slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	serving := make(chan error, 1)
	go func() { serving <- srv.ServeTLS(ln, "", "") }()
	logger.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-serving:
		logger.Error("serving failed", "err", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("shutdown", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// open makes the Handler of the flags and returns it with what closes its
// writers.
func open(ctx context.Context, tokensFile, appendFile, dsn, inventory string, records, messages int) (*Handler, func(), error) {
	tokens, err := httpbinding.LoadTokens(tokensFile)
	if err != nil {
		return nil, nil, err
	}
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	fail := func(err error) (*Handler, func(), error) {
		closeAll()
		return nil, nil, err
	}
	var sink Sink
	var inv Inventory
	switch {
	case appendFile != "":
		a, err := CreateAppendFile(appendFile)
		if err != nil {
			return fail(err)
		}
		closers, sink = append(closers, a.Close), a
	default:
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return fail(errors.New("--mysql: the DSN does not parse"))
		}
		var recs = examples.Scaled(records)
		if inventory != "mysql" {
			recs = nil
		}
		m, err := OpenMySQL(ctx, cfg, recs)
		if err != nil {
			return fail(err)
		}
		closers, sink = append(closers, m.Close), m
		if inventory == "mysql" {
			inv = m
		}
	}
	switch file, ok := strings.CutPrefix(inventory, "sqlite:"); {
	case inventory == "", inventory == "mysql" && dsn != "":
	case ok && file != "":
		s, err := CreateSQLiteInventory(ctx, file, examples.Scaled(records))
		if err != nil {
			return fail(err)
		}
		closers, inv = append(closers, s.Close), s
	default:
		return fail(fmt.Errorf("--inventory must be sqlite:FILE or, with --mysql, mysql"))
	}
	return NewHandler(tokens, sink, inv, messages), closeAll, nil
}
