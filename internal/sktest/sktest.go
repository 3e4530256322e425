// Package sktest runs real signalk-server processes for tests: each on a
// loopback port of its own, with a temporary configuration directory,
// playing the server's bundled sample feeds (the NMEA 2000 log
// aava-n2k.data and the NMEA 0183 log plaka.log).
//
// The server is the npm package pinned in testdata/signalk-server
// (package.json and package-lock.json); scripts/signalk.sh installs it and
// exports ServerEnv, the path of its signalk-server executable. Without
// ServerEnv, Start skips the test, except under CI=true, where it fails it.
//
// Every server listens on 127.0.0.1 only, through a socket this process
// binds and hands over (the server's systemd socket-activation support,
// LISTEN_FDS), so several servers run at once and none races another for a
// port. Its TCP, NMEA 0183 TCP, mDNS, app store and MFD interfaces are off,
// plugins and web apps are off, and it never asks npm for updates.
package sktest

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// ServerEnv names the environment variable that holds the path of the
// signalk-server executable (node_modules/.bin/signalk-server of an
// install of testdata/signalk-server).
const ServerEnv = "SOURCECATALOG_SIGNALK_SERVER"

// The provider ids, which are the source labels of the sample feeds: the
// ids the server's --sample-n2k-data and --sample-nmea0183-data flags give
// them, so that refs read here match a server started with those flags.
const (
	LabelN2K  = "n2k-sample-data"
	Label0183 = "nmea0183-sample-data"
)

// SelfUUID is the self vessel's identity on every server Start runs; it
// survives Restart.
const SelfUUID = "urn:mrn:signalk:uuid:5e1f0000-5e1f-4000-8000-00000000c0de"

// TokenUser is the user the bearer token of a secured server names.
const TokenUser = "sktest"

// A Feed is a set of the sample feeds.
type Feed uint8

const (
	FeedN2K  Feed = 1 << iota // aava-n2k.data, with the identity frames of testdata/n2k-identity.data unless Options.NoIdentity
	Feed0183                  // plaka.log
	FeedBoth = FeedN2K | Feed0183
)

// SharedPaths are the self paths both sample feeds write, each from one
// source per feed (measured on signalk-server 2.32.0; TestSharedPaths
// holds it). Options.Priorities ranks the NMEA 2000 source above the NMEA
// 0183 one on each of them.
var SharedPaths = []string{
	"environment.current",
	"environment.depth.belowTransducer",
	"environment.wind.angleApparent",
	"environment.wind.speedApparent",
	"navigation.courseOverGroundTrue",
	"navigation.position",
	"navigation.speedOverGround",
	"navigation.speedThroughWater",
}

// sharedSources names, for each shared path, its NMEA 2000 and NMEA 0183
// sources (by bus address and talker).
var sharedSources = map[string][2]string{
	"environment.current":               {"160", "II"},
	"environment.depth.belowTransducer": {"115", "II"},
	"environment.wind.angleApparent":    {"115", "II"},
	"environment.wind.speedApparent":    {"115", "II"},
	"navigation.courseOverGroundTrue":   {"160", "II"},
	"navigation.position":               {"160", "GP"},
	"navigation.speedOverGround":        {"160", "II"},
	"navigation.speedThroughWater":      {"115", "II"},
}

// PriorityFallback is how long, in milliseconds, the NMEA 2000 source of a
// shared path must be silent before the NMEA 0183 one may take the path
// over, when Options.Priorities is set.
const PriorityFallback = 30000

// Options say which server to run. The zero value runs both feeds, no
// priorities, no security, plain HTTP.
type Options struct {
	// Feeds are the sample feeds to play; zero means FeedBoth.
	Feeds Feed
	// Priorities configures source priorities (priorities.json,
	// priorityOverrides) for SharedPaths: the NMEA 2000 source first, the
	// NMEA 0183 source after PriorityFallback ms of silence. Without it a
	// shared path's $source follows whichever feed wrote last.
	Priorities bool
	// UseCanName sets useCanName on the NMEA 2000 provider: once a device's
	// address claim has been read, its $source refs are
	// "n2k-sample-data.<16 hex digits of its CAN name>", while /sources
	// stays keyed by bus address. Needs the identity frames.
	UseCanName bool
	// NoIdentity plays aava-n2k.data alone, as --sample-n2k-data does: it
	// has no address claim or product information, so no source carries a
	// CAN name, manufacturer or product.
	NoIdentity bool
	// Stoppable0183 feeds plaka.log to the server over TCP from this
	// process (the server's NMEA 0183 TCP client provider) instead of from
	// a file, so that Server.Stop0183 and Server.Resume0183 can stop and
	// resume the NMEA 0183 feed while the server runs.
	Stoppable0183 bool
	// Security turns token security on; Server.Token is a bearer token of
	// an admin user, and requests without it are refused.
	Security bool
	// TLS serves HTTPS (and WSS) with a certificate for 127.0.0.1 from a
	// throwaway CA; Server.Client trusts it.
	TLS bool
	// StaleTimeout, if not zero, turns the server's data timeouts on
	// (enforceDataTimeouts) with this defaultTimeout (seconds): a periodic
	// number or object value whose source is silent that long is replaced
	// by null. Zero leaves them off, the server's default: a silent
	// source's last value stays in the tree.
	StaleTimeout int
	// FileTimestamps keeps the timestamps the feeds carry (the NMEA 2000
	// sample's are of 2014) instead of running with --override-timestamps,
	// which stamps every delta with the time it arrives.
	FileTimestamps bool
	// MinSelfPaths, if not zero, makes Start wait until vessels.self has
	// at least that many leaves with a value.
	MinSelfPaths int
	// Timeout bounds each wait of Start and Restart; zero means 5 minutes
	// (a start takes 2-20 s on two idle cores, over a minute on loaded ones).
	Timeout time.Duration
}

// A Server is a running (or stopped) signalk-server.
type Server struct {
	opts    Options
	exe     string
	samples string // the server's samples directory
	dir     string // configuration directory
	logPath string
	ln      *net.TCPListener
	lnFile  *os.File
	url     string
	token   string
	client  *http.Client
	tlsConf *tls.Config // nil without TLS
	feed    *replayer   // nil unless Stoppable0183

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when cmd has been waited for; err is its result.
	exited chan struct{}
	err    error
}

// Start runs a server for the test and stops it at cleanup, showing the
// tail of its log if the test failed. Without ServerEnv it skips the test
// (fails it under CI=true); a server that cannot be started fails it.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	exe := dbtest.Env(t, ServerEnv, "the signalk-server tests", "bash scripts/test.sh installs it; or source scripts/signalk.sh and run sk_install")
	s, err := launch(exe, t.TempDir(), opts)
	if s != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("signalk-server log %s, last lines:\n%s", s.logPath, s.LogTail(60))
			}
			if err := s.Close(); err != nil {
				t.Errorf("stopping signalk-server: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("sktest: %v", err)
	}
	return s
}

// Launch runs a server outside a test (the fixture capture program): dir
// must be an existing directory the server may own. The caller must Close
// the server, also when Launch returns an error with a non-nil Server.
func Launch(exe, dir string, opts Options) (*Server, error) { return launch(exe, dir, opts) }

func launch(exe, dir string, opts Options) (*Server, error) {
	if opts.Feeds == 0 {
		opts.Feeds = FeedBoth
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.UseCanName && opts.NoIdentity {
		return nil, errors.New("UseCanName needs the identity frames (NoIdentity set)")
	}
	if opts.Stoppable0183 && opts.Feeds&Feed0183 == 0 {
		return nil, errors.New("Stoppable0183 without Feed0183")
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ServerEnv, err)
	}
	s := &Server{
		opts:    opts,
		exe:     exe,
		samples: filepath.Join(filepath.Dir(filepath.Dir(real)), "samples"),
		dir:     filepath.Join(dir, "config"),
		logPath: filepath.Join(dir, "signalk-server.log"),
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return nil, err
	}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	s.ln = ln
	if s.lnFile, err = ln.File(); err != nil {
		ln.Close()
		return nil, err
	}
	scheme := "http"
	tlsConfig := (*tls.Config)(nil)
	if opts.TLS {
		scheme = "https"
		if tlsConfig, err = s.writeCert(); err != nil {
			s.closeListener()
			return nil, err
		}
	}
	s.tlsConf = tlsConfig
	s.url = scheme + "://" + ln.Addr().String()
	s.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true},
	}
	if opts.Stoppable0183 {
		if s.feed, err = newReplayer(filepath.Join(s.samples, "plaka.log")); err != nil {
			s.closeListener()
			return nil, err
		}
	}
	if err := s.writeConfig(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.run(); err != nil {
		return s, err
	}
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:PORT (https with TLS);
// the discovery document is URL()+"/signalk". It stays the same across
// Restart.
func (s *Server) URL() string { return s.url }

// Token is the bearer token of an admin user when Options.Security is set,
// else "".
func (s *Server) Token() string { return s.token }

// Client is an HTTP client that trusts the server's certificate (TLS) and
// sends no token.
func (s *Server) Client() *http.Client { return s.client }

// CertPool holds the CA of the server's certificate (nil without TLS).
func (s *Server) CertPool() *x509.CertPool {
	if s.tlsConf == nil {
		return nil
	}
	return s.tlsConf.RootCAs
}

// Dir is the server's configuration directory.
func (s *Server) Dir() string { return s.dir }

// LogPath is the file the server's stdout and stderr go to, across
// restarts.
func (s *Server) LogPath() string { return s.logPath }

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// run starts the server process and waits until it answers and, with
// MinSelfPaths, until its self tree is that big.
func (s *Server) run() error {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "\n--- sktest: starting %s at %s (%s)\n", s.exe, s.url, time.Now().UTC().Format(time.RFC3339Nano))
	port := fmt.Sprint(s.ln.Addr().(*net.TCPAddr).Port)
	args := []string{"--no-plugins", "--no-webapps"}
	if !s.opts.FileTimestamps {
		args = append(args, "--override-timestamps")
	}
	cmd := exec.Command(s.exe, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(),
		"SIGNALK_NODE_CONFIG_DIR="+s.dir,
		// The server listens on the socket passed as fd 3 (ExtraFiles[0]).
		"LISTEN_FDS=1",
		// PORT and SSLPORT only set the port the discovery document names.
		"PORT="+port,
		"SIGNALK_DISABLE_SERVER_UPDATES=1",
	)
	if s.opts.TLS {
		cmd.Env = append(cmd.Env, "SSLPORT="+port)
	}
	cmd.ExtraFiles = []*os.File{s.lnFile}
	cmd.Stdout, cmd.Stderr = log, log
	// A group of its own, so Stop can signal all of it; killed with this
	// process, so a test binary that dies (a go test timeout skips every
	// cleanup) leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(exited)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	if err := s.poll(ctx, exited, func() (bool, error) {
		_, err := s.Get(ctx, "/signalk")
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("signalk-server did not answer: %w", err)
	}
	if s.opts.MinSelfPaths > 0 {
		if err := s.WaitSelfPaths(ctx, s.opts.MinSelfPaths); err != nil {
			return err
		}
	}
	return nil
}

// poll calls ready every 250 ms until it reports true, the server exits,
// or ctx ends.
func (s *Server) poll(ctx context.Context, exited chan struct{}, ready func() (bool, error)) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := ready()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-exited:
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			return fmt.Errorf("signalk-server exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// WaitSelfPaths waits until vessels.self has at least n leaves that carry
// a value (CountLeaves), or ctx ends.
func (s *Server) WaitSelfPaths(ctx context.Context, n int) error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	last := 0
	err := s.poll(ctx, exited, func() (bool, error) {
		b, err := s.Get(ctx, "/signalk/v1/api/vessels/self")
		if err != nil {
			return false, nil
		}
		var self any
		if err := json.Unmarshal(b, &self); err != nil {
			return false, fmt.Errorf("vessels/self: %w", err)
		}
		last = CountLeaves(self)
		return last >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d self paths (have %d): %w", n, last, err)
	}
	return nil
}

// CountLeaves counts the leaves of a Signal K tree: the objects with a
// "value" member (their "values" and "meta" are not searched further).
func CountLeaves(tree any) int {
	o, ok := tree.(map[string]any)
	if !ok {
		return 0
	}
	if _, ok := o["value"]; ok {
		return 1
	}
	n := 0
	for k, v := range o {
		if k != "meta" {
			n += CountLeaves(v)
		}
	}
	return n
}

// Get reads path from the server (with the token when security is on) and
// returns the body of a 200 answer; any other status is an error.
func (s *Server) Get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return nil, err
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, nil
}

// Stop stops the server process (SIGTERM to its process group, SIGKILL to
// the group after 10 s) and waits for it. The group is only signalled while
// the server has not been reaped, so that its id cannot name another. The port stays bound to this process, so
// a connection made while the server is stopped waits (until Restart)
// instead of being refused. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
	default:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	s.mu.Lock()
	s.cmd = nil
	s.mu.Unlock()
	return nil
}

// Restart stops the server and starts it again with the same
// configuration, port and self identity; the new process has a new
// serverStartId. It waits as Start does.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.run()
}

// Close stops the server, closes its port and stops the NMEA 0183 feed.
func (s *Server) Close() error {
	err := s.Stop()
	s.closeListener()
	return err
}

func (s *Server) closeListener() {
	if s.lnFile != nil {
		s.lnFile.Close()
	}
	if s.ln != nil {
		s.ln.Close()
	}
	if s.feed != nil {
		s.feed.close()
	}
}

// Stop0183 stops the NMEA 0183 feed (Options.Stoppable0183): the
// connections the server made are closed and new ones get no data until
// Resume0183.
func (s *Server) Stop0183() {
	if s.feed == nil {
		panic("sktest: Stop0183 without Options.Stoppable0183")
	}
	s.feed.pause(true)
}

// Resume0183 resumes the NMEA 0183 feed stopped by Stop0183.
func (s *Server) Resume0183() {
	if s.feed == nil {
		panic("sktest: Resume0183 without Options.Stoppable0183")
	}
	s.feed.pause(false)
}

// writeConfig writes settings.json, baseDeltas.json and, as the options
// ask, priorities.json, security.json and the NMEA 2000 feed file.
func (s *Server) writeConfig() error {
	var providers []any
	if s.opts.Feeds&FeedN2K != 0 {
		file := filepath.Join(s.samples, "aava-n2k.data")
		if !s.opts.NoIdentity {
			file = filepath.Join(s.dir, "n2k-with-identity.data")
			if err := writeN2K(file, filepath.Join(s.samples, "aava-n2k.data")); err != nil {
				return err
			}
		}
		sub := map[string]any{"dataType": "NMEA2000JS", "filename": file}
		if s.opts.UseCanName {
			sub["useCanName"] = true
		}
		providers = append(providers, provider(LabelN2K, "FileStream", sub))
	}
	if s.opts.Feeds&Feed0183 != 0 {
		if s.feed != nil {
			providers = append(providers, provider(Label0183, "NMEA0183", map[string]any{
				"type": "tcp", "host": "127.0.0.1", "port": s.feed.port(),
			}))
		} else {
			providers = append(providers, provider(Label0183, "FileStream", map[string]any{
				"dataType": "NMEA0183", "filename": filepath.Join(s.samples, "plaka.log"),
			}))
		}
	}
	settings := map[string]any{
		"interfaces": map[string]bool{
			"tcp": false, "nmea-tcp": false, "appstore": false, "mfd_webapp": false,
		},
		"mdns":           false,
		"pipedProviders": providers,
	}
	if s.opts.StaleTimeout > 0 {
		settings["enforceDataTimeouts"] = true
		settings["defaultTimeout"] = s.opts.StaleTimeout
	}
	if s.opts.TLS {
		settings["ssl"] = true
	}
	if s.opts.Security {
		settings["security"] = map[string]string{"strategy": "./tokensecurity"}
		if err := s.writeSecurity(); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(s.dir, "settings.json"), settings, 0o600); err != nil {
		return err
	}
	base := []any{map[string]any{
		"context": "vessels.self",
		"updates": []any{map[string]any{"values": []any{
			map[string]any{"path": "", "value": map[string]string{"uuid": SelfUUID}},
		}}},
	}}
	if err := writeJSON(filepath.Join(s.dir, "baseDeltas.json"), base, 0o600); err != nil {
		return err
	}
	if s.opts.Priorities {
		prio, err := Priorities(s.opts.UseCanName)
		if err != nil {
			return err
		}
		return writeJSON(filepath.Join(s.dir, "priorities.json"), prio, 0o600)
	}
	return nil
}

// Priorities returns the priorities.json content Options.Priorities
// writes: for each of SharedPaths, the NMEA 2000 source first (timeout 0)
// and the NMEA 0183 source second (timeout PriorityFallback). A ref names
// an NMEA 2000 source as its deltas do: by CAN name with useCanName, by
// bus address without. (signalk-server 2.32.0 is meant to match either
// form to the other, but a ranking by CAN name on a server without
// useCanName was seen to rank nothing: the NMEA 2000 source counted as
// unknown and the NMEA 0183 source held every shared path.)
func Priorities(useCanName bool) (map[string]any, error) {
	names := map[string]string{}
	if useCanName {
		var err error
		if names, err = CANNames(); err != nil {
			return nil, err
		}
	}
	overrides := map[string]any{}
	for _, p := range SharedPaths {
		src := sharedSources[p]
		n2k := src[0]
		if useCanName {
			name, ok := names[n2k]
			if !ok {
				return nil, fmt.Errorf("no CAN name for address %s in %s", n2k, identityFile())
			}
			n2k = name
		}
		overrides[p] = []any{
			map[string]any{"sourceRef": LabelN2K + "." + n2k, "timeout": 0},
			map[string]any{"sourceRef": Label0183 + "." + src[1], "timeout": PriorityFallback},
		}
	}
	return map[string]any{"priorityOverrides": overrides}, nil
}

// CANNames returns the CAN name of each device of the identity frames
// (testdata/n2k-identity.data), by bus address: the 16 lowercase hex
// digits of the 64-bit little-endian payload of its PGN 60928 address
// claim, as the server renders it.
func CANNames() (map[string]string, error) {
	b, err := os.ReadFile(identityFile())
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 6 || f[2] != "60928" {
			continue
		}
		if len(f) != 14 || f[5] != "8" {
			return nil, fmt.Errorf("address claim %q: want 8 bytes", line)
		}
		var name strings.Builder
		for i := 13; i >= 6; i-- {
			if len(f[i]) != 2 {
				return nil, fmt.Errorf("address claim %q: byte %q", line, f[i])
			}
			name.WriteString(strings.ToLower(f[i]))
		}
		names[f[3]] = name.String()
	}
	return names, nil
}

func provider(id, typ string, sub map[string]any) map[string]any {
	return map[string]any{
		"id":      id,
		"enabled": true,
		"pipeElements": []any{map[string]any{
			"type": "providers/simple",
			"options": map[string]any{
				"logging":    false,
				"type":       typ,
				"subOptions": sub,
			},
		}},
	}
}

// writeN2K writes the identity frames followed by the sample to file.
func writeN2K(file, sample string) error {
	id, err := os.ReadFile(identityFile())
	if err != nil {
		return err
	}
	b, err := os.ReadFile(sample)
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(id, b...), 0o600)
}

// identityFile is testdata/n2k-identity.data next to this source file.
func identityFile() string { return filepath.Join(sourceDir(), "testdata", "n2k-identity.data") }

// writeSecurity writes security.json (a random secret key and one admin
// user) and signs the user's token: an HS256 JWT {"id": TokenUser}, what
// signalk-generate-token makes, without expiry.
func (s *Server) writeSecurity() error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	secret := hex.EncodeToString(key)
	sec := map[string]any{
		"allow_readonly":            false,
		"expiration":                "NEVER",
		"secretKey":                 secret,
		"allowNewUserRegistration":  false,
		"allowDeviceAccessRequests": false,
		"users":                     []any{map[string]string{"username": TokenUser, "type": "admin"}},
		"devices":                   []any{},
		"acls":                      []any{},
	}
	if err := writeJSON(filepath.Join(s.dir, "security.json"), sec, 0o600); err != nil {
		return err
	}
	s.token = signJWT(secret, fmt.Sprintf(`{"id":%q,"iat":%d}`, TokenUser, time.Now().Unix()))
	return nil
}

// signJWT returns the HS256 JWT of the JSON claims, signed with secret.
func signJWT(secret, claims string) string {
	enc := base64.RawURLEncoding
	msg := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(claims))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	return msg + "." + enc.EncodeToString(mac.Sum(nil))
}

// writeCert writes ssl-cert.pem and ssl-key.pem (0600, which the server
// insists on) for 127.0.0.1 and returns a client configuration trusting
// their CA.
func (s *Server) writeCert() (*tls.Config, error) {
	ca, err := testpki.NewCA("sktest signalk-server CA")
	if err != nil {
		return nil, err
	}
	leaf, err := ca.Server()
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := testpki.PEM(leaf)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "ssl-cert.pem"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "ssl-key.pem"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}, nil
}

func writeJSON(file string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), mode)
}

// Hello opens the server's WebSocket stream with subscribe=none and returns
// its first message (the hello: name, version, self, roles, timestamp and
// serverStartId) as received.
func (s *Server) Hello(ctx context.Context) ([]byte, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", s.ln.Addr().String())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	if s.tlsConf != nil {
		cfg := s.tlsConf.Clone()
		cfg.ServerName = "127.0.0.1"
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		conn = tc
	}
	keyBytes := make([]byte, 16)
	if _, err := rand.Read(keyBytes); err != nil {
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(keyBytes)
	req, err := http.NewRequest(http.MethodGet, s.url+"/signalk/v1/stream?subscribe=none", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Version", "13")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	sum := sha1Accept(key)
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != sum {
		return nil, fmt.Errorf("websocket handshake: Sec-WebSocket-Accept %q, want %q", got, sum)
	}
	return readTextFrame(br)
}

// StartID returns the serverStartId of the server's hello.
func (s *Server) StartID(ctx context.Context) (string, error) {
	b, err := s.Hello(ctx)
	if err != nil {
		return "", err
	}
	var hello struct {
		ServerStartID string `json:"serverStartId"`
	}
	if err := json.Unmarshal(b, &hello); err != nil {
		return "", fmt.Errorf("hello %q: %w", b, err)
	}
	if hello.ServerStartID == "" {
		return "", fmt.Errorf("hello %q has no serverStartId", b)
	}
	return hello.ServerStartID, nil
}

// sha1Accept is the Sec-WebSocket-Accept answer to key (RFC 6455 §4.2.2).
func sha1Accept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// sourceDir is the directory of this source file.
func sourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("sktest: no caller information")
	}
	return filepath.Dir(file)
}

// readTextFrame reads one unfragmented, unmasked text frame of at most
// 1 MiB.
func readTextFrame(r *bufio.Reader) ([]byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	if h[0] != 0x81 {
		return nil, fmt.Errorf("websocket: first frame byte %#x, want a final text frame (0x81)", h[0])
	}
	if h[1]&0x80 != 0 {
		return nil, errors.New("websocket: server frame is masked")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, err
		}
		n = uint64(l[0])<<8 | uint64(l[1])
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, err
		}
		n = 0
		for _, c := range l {
			n = n<<8 | uint64(c)
		}
	}
	if n > 1<<20 {
		return nil, fmt.Errorf("websocket: frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
