package httpbinding_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// tries is how many times each early answer is sent: every one of them
// must be read.
const tries = 10

// An earlyRig serves vessels A and B by bearer token, with the read
// timeout read (0 for the default), and holds one request of B in the
// store so that B's next one is over its limit.
type earlyRig struct {
	*rig
	caFile string
}

const (
	earlyTokenA = "token-of-vessel-a"
	earlyTokenB = "token-of-vessel-b"
)

func startEarlyRig(t *testing.T, read time.Duration) *earlyRig {
	t.Helper()
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(earlyTokenA, vesselA) + "\n" + httpbinding.TokenHash(earlyTokenB, vesselB) + "\n"))
	require.NoError(t, err)
	gate := &gateStore{Store: memstore.New(), entered: make(chan struct{}, 64), gate: make(chan struct{})}
	r := startRig(t, rigConfig{
		store:    gate,
		auth:     func(*testCA) httpbinding.Authenticator { return tokens },
		timeouts: httpbinding.Timeouts{Read: read},
		opts:     []httpbinding.HandlerOption{httpbinding.WithMaxInFlight(1)},
	})
	// B's one slot is taken until the test ends.
	held := make(chan error, 1)
	go func() {
		c, err := httpbinding.NewClient(r.url, httpbinding.WithTLSConfig(r.tlsFor(nil)), httpbinding.WithBearerToken(earlyTokenB), httpbinding.WithTimeout(time.Minute))
		if err == nil {
			_, err = c.Send(context.Background(), commitCycle(t, vesselB, uuid.Nil, "nav", 1).entries[0])
			c.CloseIdleConnections()
		}
		held <- err
	}()
	select {
	case <-gate.entered:
	case err := <-held:
		t.Fatalf("B's request ended before reaching the store: %v", err)
	}
	t.Cleanup(func() { close(gate.gate); <-held })
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, r.ca.CertPEM(), 0o600))
	return &earlyRig{rig: r, caFile: caFile}
}

// earlyRigs are an earlyRig with the default timeouts, and one whose 1 s
// read timeout cuts a stalled body: the 400 cases'.
type earlyRigs struct{ fast, slow *earlyRig }

func startEarlyRigs(t *testing.T) earlyRigs {
	return earlyRigs{fast: startEarlyRig(t, 0), slow: startEarlyRig(t, time.Second)}
}

func (r earlyRigs) of(tc earlyCase) *earlyRig {
	if tc.status == http.StatusBadRequest {
		return r.slow
	}
	return r.fast
}

// An earlyCase is a request answered before its body is read in full.
type earlyCase struct {
	name    string
	method  string
	header  map[string]string
	size    int  // the body's length, announced unless chunked
	chunked bool // sent with Transfer-Encoding: chunked
	first   int  // bytes sent before the answer is awaited
	status  int
}

func earlyCases() []earlyCase {
	json := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + earlyTokenA}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for k, v := range json {
			h[k] = v
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	const mib = 1 << 20
	return []earlyCase{
		{"405 PUT", http.MethodPut, json, mib, false, 16 << 10, http.StatusMethodNotAllowed},
		{"401 no token", http.MethodPost, with("Authorization", ""), mib, false, 16 << 10, http.StatusUnauthorized},
		{"415 text/plain", http.MethodPost, with("Content-Type", "text/plain"), mib, false, 16 << 10, http.StatusUnsupportedMediaType},
		{"415 Content-Encoding br", http.MethodPost, with("Content-Encoding", "br"), mib, false, 16 << 10, http.StatusUnsupportedMediaType},
		{"429 B over its limit", http.MethodPost, with("Authorization", "Bearer "+earlyTokenB), mib, false, 16 << 10, http.StatusTooManyRequests},
		{"413 announced 32769", http.MethodPost, json, httpbinding.MaxRequestBody + 1, false, 16 << 10, http.StatusRequestEntityTooLarge},
		{"413 announced 1 MiB", http.MethodPost, json, mib, false, 16 << 10, http.StatusRequestEntityTooLarge},
		{"413 chunked", http.MethodPost, json, mib, true, 40 << 10, http.StatusRequestEntityTooLarge},
		// The rest of the body comes only after the answer, which the
		// read timeout (earlyRigs) makes a 400.
		{"400 body stalls", http.MethodPost, json, 20 << 10, false, 16 << 10, http.StatusBadRequest},
	}
}

// Every answer given before the body is read — 405, 401, 415, 429, 413,
// 400 — reaches a sender still sending the body, 10 times in 10 with Go's
// client: the server closes only after a lingering close, so the sender
// never meets a reset instead of the answer.
func TestEarlyAnswersAreReadByGo(t *testing.T) {
	rigs := startEarlyRigs(t)
	for _, tc := range earlyCases() {
		r := rigs.of(tc)
		t.Run(tc.name, func(t *testing.T) {
			for i := range tries {
				status, err := goEarly(t, r, tc)
				require.NoError(t, err, "try %d", i+1)
				require.Equal(t, tc.status, status, "try %d", i+1)
			}
		})
	}
}

// goEarly sends tc's first bytes, waits for the answer, and only then
// sends the rest of the body: the answer comes while the body is still
// being sent.
func goEarly(t *testing.T, r *earlyRig, tc earlyCase) (int, error) {
	t.Helper()
	// The client reads its first answer bytes a while after they came,
	// as a sender busy sending does: a reset in between would destroy
	// them.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&tls.Dialer{Config: r.tlsFor(nil)}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &lateReader{Conn: conn}, nil
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialTLSContext: dial}}
	defer hc.CloseIdleConnections()
	pr, pw := io.Pipe()
	req, err := http.NewRequest(tc.method, r.url, pr)
	require.NoError(t, err)
	if !tc.chunked {
		req.ContentLength = int64(tc.size)
	}
	for k, v := range tc.header {
		req.Header.Set(k, v)
	}
	answered := make(chan struct{})
	var sending sync.WaitGroup
	sending.Add(1)
	go func() {
		defer sending.Done()
		body := bytes.Repeat([]byte(" "), tc.size)
		if _, err := pw.Write(body[:tc.first]); err != nil {
			return
		}
		select {
		case <-answered:
		case <-time.After(20 * time.Second):
		}
		_, _ = pw.Write(body[tc.first:]) // fails once the connection is closed
		pw.Close()
	}()
	defer sending.Wait()
	defer pw.CloseWithError(io.ErrClosedPipe)
	resp, err := hc.Do(req)
	close(answered)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return resp.StatusCode, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, nil
}

// A lateReader is a connection whose first Read waits readDelay.
type lateReader struct {
	net.Conn
	once sync.Once
}

const readDelay = 100 * time.Millisecond

func (c *lateReader) Read(p []byte) (int, error) {
	c.once.Do(func() { time.Sleep(readDelay) })
	return c.Conn.Read(p)
}

// The same answers, 10 times in 10, with curl sending the body at a
// bounded rate, so that it is still sending when the answer comes, and,
// for the 413 of 32,769 bytes, as fast as it can. For the 400 curl sends
// from its standard input: the first bytes, then nothing until the
// server has answered, then the rest.
func TestEarlyAnswersAreReadByCurl(t *testing.T) {
	curl := curlBinary(t)
	rigs := startEarlyRigs(t)
	dir := t.TempDir()
	cases := earlyCases()
	cases = append(cases, earlyCase{name: "413 announced 32769 at full speed", method: http.MethodPost, header: cases[4].header,
		size: httpbinding.MaxRequestBody + 1, status: http.StatusRequestEntityTooLarge})
	for _, tc := range cases {
		r := rigs.of(tc)
		stalls := tc.status == http.StatusBadRequest
		t.Run(tc.name, func(t *testing.T) {
			body := filepath.Join(dir, fmt.Sprintf("body-%d", tc.size))
			require.NoError(t, os.WriteFile(body, bytes.Repeat([]byte(" "), tc.size), 0o600))
			args := []string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--cacert", r.caFile,
				"-X", tc.method, "-H", "Expect:"}
			switch {
			case stalls:
				args = append(args, "-T", "-") // chunked, from standard input
			case tc.first > 0: // not at full speed
				args = append(args, "--data-binary", "@"+body, "--limit-rate", "200k")
			default:
				args = append(args, "--data-binary", "@"+body)
			}
			if tc.chunked {
				args = append(args, "-H", "Transfer-Encoding: chunked")
			}
			if _, ok := tc.header["Content-Type"]; !ok {
				args = append(args, "-H", "Content-Type:")
			}
			for k, v := range tc.header {
				args = append(args, "-H", k+": "+v)
			}
			for i := range tries {
				var stderr bytes.Buffer
				cmd := exec.Command(curl, append(args, r.url)...)
				cmd.Stderr = &stderr
				var sending sync.WaitGroup
				if stalls {
					stdin, err := cmd.StdinPipe()
					require.NoError(t, err)
					before := len(r.events.of(httpbinding.EventMessage))
					sending.Add(1)
					go func() {
						defer sending.Done()
						defer stdin.Close()
						if _, err := stdin.Write(make([]byte, tc.first)); err != nil {
							return
						}
						for deadline := time.Now().Add(20 * time.Second); !answered(r.events, before) && time.Now().Before(deadline); {
							time.Sleep(10 * time.Millisecond) // until the server has answered
						}
						_, _ = stdin.Write(make([]byte, tc.size-tc.first))
					}()
				}
				out, err := cmd.Output()
				sending.Wait()
				require.NoError(t, err, "try %d: curl: %s", i+1, stderr.String())
				require.Equal(t, fmt.Sprint(tc.status), string(out), "try %d: curl: %s %+v", i+1, stderr.String(), r.events.of(httpbinding.EventMessage))
			}
		})
	}
}

// answered reports whether a message after the first before was answered
// 400.
func answered(l *eventLog, before int) bool {
	for _, ev := range l.of(httpbinding.EventMessage)[before:] {
		if ev.Status == http.StatusBadRequest {
			return true
		}
	}
	return false
}

// curlBinary returns the path of curl; without it the test is skipped,
// and fails under CI=true.
func curlBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is required under CI=true: %v", err)
		}
		t.Skipf("curl not found: %v", err)
	}
	return path
}
