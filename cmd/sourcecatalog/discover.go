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
	synopsis: "--signalk URL [--signalk-token-file FILE] [--signalk-ca FILE] [--selection lowest-ref|server] [--settle D]",
	summary:  "print one discovery cycle of a Signal K server as records",
	help: `Discover reads one discovery cycle from a Signal K server over its v1 REST
API (SPEC.md §12) and prints the records of what the vessel currently
selects as a JSON array, one record per line in canonical order: the
input of commit, for a controller that pipes the two,
  sourcecatalog discover --signalk http://localhost:3000 > cycle.json &&
  sourcecatalog commit --store sqlite:boat.db --vessel "$VESSEL" cycle.json

A scan is trusted only once the server has run for the settle time as
discover has seen it (the start id of its WebSocket hello): a server's
tree fills for tens of seconds after a start, and the v1 API says nothing
of when it started. So discover scans, is told that the server has not
settled, waits the settle time, and scans again — three scans at most, a
restart during the wait or the scan making it wait again. Pass --settle 0
only for a server known to have run long enough.

Flags (each at most once):
  --signalk URL              the Signal K server, http or https, such as
                             http://localhost:3000
  --signalk-token-file FILE  a file holding a bearer token for a server with
                             security on (its first line), sent to that
                             server only
  --signalk-ca FILE          PEM certificates of the CAs that sign an https
                             server's certificate (default: the system's roots)
  --selection S              the source reported for a path that several live
                             sources feed: lowest-ref (default: the smallest
                             source ref, the same on every read) or server
                             (the server's $source: only with source
                             priorities configured for every such path)
  --settle D                 the settle time (default 2m; 0 trusts the first
                             scan)

Output: the records, "[" and "]" on lines of their own; nothing on an
incomplete scan. The waits are told on standard error.

Exit status: 0 printed; 1 an incomplete scan (the server unreachable or
answering other than 2xx, a body cut short or too large, a model the
mapping cannot read, a source the tree does not list, a server that has
not settled or restarted) or records the library refuses (more than
25,600, a path or source breaking a record rule) — nothing to commit —,
or a file of the flags that cannot be read; 2 usage error.
`,
	run: runDiscover,
}

// signalkFlags are the flags of the Signal K server, which discover and
// agent share.
type signalkFlags struct {
	server, tokenFile, ca stringFlag
	selection             selectionFlag
	settle                settleFlag
}

func newSignalkFlags() signalkFlags {
	return signalkFlags{settle: settleFlag{d: signalk.DefaultSettle}}
}

func (f *signalkFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.server, "signalk", "")
	fs.Var(&f.tokenFile, "signalk-token-file", "")
	fs.Var(&f.ca, "signalk-ca", "")
	fs.Var(&f.selection, "selection", "")
	fs.Var(&f.settle, "settle", "")
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
	opts := []signalk.Option{signalk.WithSettle(f.settle.d), signalk.WithSelection(f.selection.s)}
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
