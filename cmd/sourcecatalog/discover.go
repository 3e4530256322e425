package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

var discoverCommand = &command{
	name:     "discover",
	synopsis: "--signalk URL [--signalk-token-file FILE] [--signalk-ca FILE] [--selection lowest-ref|server] [--settle D] [--max-age D]",
	summary:  "print one discovery cycle of a Signal K server as records",
	help:     helpText("discover"),
	run:      runDiscover,
}

// signalkFlags are the flags of the Signal K server, which discover and
// agent share.
type signalkFlags struct {
	server, tokenFile, ca stringFlag
	selection             selectionFlag
	settle                settleFlag
	maxAge                settleFlag
}

func newSignalkFlags() signalkFlags {
	return signalkFlags{settle: settleFlag{d: signalk.DefaultSettle}, maxAge: settleFlag{d: signalk.DefaultMaxAge}}
}

func (f *signalkFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.server, "signalk", "")
	fs.Var(&f.tokenFile, "signalk-token-file", "")
	fs.Var(&f.ca, "signalk-ca", "")
	fs.Var(&f.selection, "selection", "")
	fs.Var(&f.settle, "settle", "")
	fs.Var(&f.maxAge, "max-age", "")
}

// check returns what is wrong with the Signal K flags, or "".
func (f *signalkFlags) check() string {
	u, err := url.Parse(f.server.s)
	switch {
	case !f.server.set:
		return "--signalk is required"
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		return "--signalk must be an http or https URL without user, such as http://localhost:3000"
	}
	return ""
}

// client returns the Discoverer the flags describe. Its errors name the
// flag at fault, never a token.
func (f *signalkFlags) client() (*signalk.Client, error) {
	opts := []signalk.Option{signalk.WithSettle(f.settle.d), signalk.WithSelection(f.selection.s), signalk.WithMaxAge(f.maxAge.d)}
	if f.tokenFile.set {
		token, err := readToken("--signalk-token-file", f.tokenFile.s)
		if err != nil {
			return nil, err
		}
		opts = append(opts, signalk.WithToken(token))
	}
	if f.ca.set {
		roots, err := readCAs("--signalk-ca", f.ca.s)
		if err != nil {
			return nil, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		opts = append(opts, signalk.WithHTTPClient(&http.Client{Transport: tr}))
	}
	c, err := signalk.New(f.server.s, opts...)
	if err != nil {
		return nil, fmt.Errorf("--signalk: %v", located(err))
	}
	return c, nil
}

// discoverTries bounds discover's scans: the settle wait, then one wait
// more for a restart.
const discoverTries = 3

func runDiscover(e *env, c *command, args []string) int {
	f := newSignalkFlags()
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	f.register(fs)
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	if len(operands) > 0 {
		return c.usageError(e, "unexpected argument %q: discover takes no arguments", operands[0])
	}
	if msg := f.check(); msg != "" {
		return c.usageError(e, "%s", msg)
	}
	client, err := f.client()
	if err != nil {
		return c.failf(e, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	records, err := agent.DiscoverSettled(ctx, client, nil, discoverTries, func(wait time.Duration, err error) {
		fmt.Fprintf(e.stderr, "sourcecatalog %s: %s; scanning again in %v\n", c.name, located(err), wait)
	})
	var scan *signalk.ScanError
	switch {
	case errors.As(err, &scan):
		return c.failf(e, "%v; nothing to commit", located(err))
	case err != nil:
		return c.problems(e, err, "nothing to commit")
	}
	if _, err := e.stdout.Write(catalog.EncodeList(records)); err != nil {
		return c.failf(e, "%v", err)
	}
	return exitOK
}

// selectionFlag is a signalk.Selection flag.
type selectionFlag struct {
	s   signalk.Selection
	set bool
}

func (f *selectionFlag) String() string { return f.s.String() }
func (f *selectionFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	sel, err := signalk.ParseSelection(s)
	if err != nil {
		return errors.New("must be lowest-ref or server")
	}
	f.s, f.set = sel, true
	return nil
}

// settleFlag is a duration flag that may be 0.
type settleFlag struct {
	d   time.Duration
	set bool
}

func (f *settleFlag) String() string { return "" }
func (f *settleFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return errors.New("must be a duration of 0 or more, such as 0s or 2m")
	}
	f.d, f.set = d, true
	return nil
}

// readCAs reads the PEM certificates of the file the flag names, as the
// roots to trust; its errors name the flag and the file.
func readCAs(flag, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in %s", flag, path)
	}
	return roots, nil
}

// readToken reads the first line of a token file, without its
// surrounding white space; its errors start with the flag's name.
func readToken(flag, path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, 4096))
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	token := strings.TrimSpace(line)
	if token == "" {
		return "", fmt.Errorf("%s: %s holds no token on its first line", flag, path)
	}
	return token, nil
}
