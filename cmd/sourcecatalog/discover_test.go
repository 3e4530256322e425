package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

// skModel is a Signal K v1 full model: a depth from an NMEA 2000 sounder
// and a speed from an NMEA 0183 GPS (signalk's example, two sources).
const skModel = `{
  "self": "vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d",
  "vessels": {"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d": {
    "environment": {"depth": {"belowTransducer": {
      "meta": {"units": "m", "description": "Depth below Transducer", "displayUnits": {"symbol": "ft"}},
      "value": 4.2, "$source": "can0.115", "timestamp": "2026-12-01T21:00:00.000Z", "pgn": 128267}}},
    "navigation": {"speedOverGround": {"meta": {"units": "m/s"},
      "value": 3.1, "$source": "nmea0183.GP", "timestamp": "2026-12-01T21:00:00.000Z", "sentence": "RMC"}}}},
  "sources": {
    "can0": {"label": "can0", "type": "NMEA2000",
      "115": {"n2k": {"src": "115", "manufacturerCode": "Airmar", "modelId": "DST800", "pgns": {"128267": "2026-12-01T21:00:00.000Z"}}}},
    "nmea0183": {"label": "nmea0183", "type": "NMEA0183", "GP": {"talker": "GP", "sentences": {"RMC": "2026-12-01T21:00:00.000Z"}}}}
}`

// A fakeSignalK answers as a Signal K server does: the discovery
// document, the stream's hello with a start id, and the full model, or
// fail while positive.
type fakeSignalK struct {
	*httptest.Server
	fail   atomic.Int64 // while positive, the model is answered 500
	models atomic.Int64 // full models served
	mu     sync.Mutex
	auth   []string
}

func startSignalK(t *testing.T) *fakeSignalK {
	t.Helper()
	f := &fakeSignalK{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /signalk", func(w http.ResponseWriter, r *http.Request) {
		f.seen(r)
		base := "http://" + r.Host
		_, _ = w.Write([]byte(`{"endpoints":{"v1":{"version":"2.32.0","signalk-http":"` + base + `/signalk/v1/api/","signalk-ws":"ws://` + r.Host + `/signalk/v1/stream"}},"server":{"id":"signalk-server-node","version":"2.32.0"}}`))
	})
	mux.HandleFunc("GET /signalk/v1/api/", func(w http.ResponseWriter, r *http.Request) {
		f.seen(r)
		if f.fail.Add(-1) >= 0 {
			http.Error(w, "down (test)", http.StatusInternalServerError)
			return
		}
		f.fail.Store(0)
		f.models.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(skModel))
	})
	mux.HandleFunc("GET /signalk/v1/stream", func(w http.ResponseWriter, r *http.Request) {
		f.seen(r)
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		_ = conn.Write(r.Context(), websocket.MessageText, []byte(`{"name":"boat","version":"2.32.0","self":"vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d","roles":["master","main"],"timestamp":"2026-12-01T21:00:30.000Z","serverStartId":"start-1"}`))
		_, _, _ = conn.Read(r.Context()) // until the client closes
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSignalK) seen(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
}

// skRecords are the records of skModel, as signalk maps them.
func skRecords(t *testing.T) []*catalog.Record {
	t.Helper()
	rs, err := signalk.Map([]byte(skModel), signalk.SelectLowestRef)
	require.NoError(t, err)
	require.Len(t, rs, 6, "two paths, two sources, two observations")
	return rs
}

// discover prints the records commit reads; piped into commit, they make
// a cycle. The token goes to the Signal K server.
func TestDiscover(t *testing.T) {
	sk := startSignalK(t)
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "sk-token", []byte("  sk-s3cret \nignored\n"))
	r := cli(t, "", "discover", "--signalk", sk.URL, "--settle", "0", "--signalk-token-file", tokenFile)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Equal(t, string(catalog.EncodeList(skRecords(t))), r.stdout, "one canonical record per line")
	sk.mu.Lock()
	assert.Equal(t, []string{"Bearer sk-s3cret", "Bearer sk-s3cret", "Bearer sk-s3cret", "Bearer sk-s3cret"}, sk.auth)
	sk.mu.Unlock()

	c := cli(t, r.stdout, "commit", "--json", "--store", "sqlite:"+filepath.Join(dir, "boat.db"), "--vessel", vesselFlag, "-")
	require.Equal(t, exitOK, c.code, c.stderr)
	var out commitOut
	decodeStrict(t, c.stdout, &out)
	assert.Equal(t, 6, out.RecordCount)
	assert.Equal(t, 2, out.Entries, "the manifest and one chunk")
}

// discover waits the settle time and scans again; an incomplete scan
// prints nothing and exits 1.
func TestDiscoverSettlesOrFails(t *testing.T) {
	sk := startSignalK(t)
	r := cli(t, "", "discover", "--signalk", sk.URL, "--settle", "20ms")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, string(catalog.EncodeList(skRecords(t))), r.stdout)
	assert.Contains(t, r.stderr, "sourcecatalog discover: ")
	assert.Contains(t, r.stderr, "settle time")
	assert.Contains(t, r.stderr, "; scanning again in ")
	assert.Equal(t, int64(1), sk.models.Load(), "the settling scan stops before the model")

	sk.fail.Store(1 << 20)
	r = cli(t, "", "discover", "--signalk", sk.URL, "--settle", "0")
	assert.Equal(t, exitInvalid, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "sourcecatalog discover: ")
	assert.Contains(t, r.stderr, "incomplete scan")
	assert.Contains(t, r.stderr, "; nothing to commit\n")
}

func TestDiscoverRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty", []byte("\n"))
	const u = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no server", nil, exitUsage, "--signalk is required"},
		{"ftp", []string{"--signalk", "ftp://127.0.0.1/"}, exitUsage, "--signalk must be an http or https URL"},
		{"user", []string{"--signalk", "http://me@127.0.0.1/"}, exitUsage, "--signalk must be an http or https URL"},
		{"argument", []string{"--signalk", u, "extra"}, exitUsage, `unexpected argument "extra"`},
		{"selection", []string{"--signalk", u, "--selection", "first"}, exitUsage, "--selection must be lowest-ref or server"},
		{"negative settle", []string{"--signalk", u, "--settle", "-1s"}, exitUsage, "--settle must be a duration of 0 or more"},
		{"settle twice", []string{"--signalk", u, "--settle", "1s", "--settle", "2s"}, exitUsage, "--settle"},
		{"empty token", []string{"--signalk", u, "--signalk-token-file", empty}, exitInvalid, "--signalk-token-file: " + empty + " holds no token"},
		{"ca not PEM", []string{"--signalk", u, "--signalk-ca", empty}, exitInvalid, "--signalk-ca: no PEM certificate"},
		{"unreachable", []string{"--signalk", u, "--settle", "0"}, exitInvalid, "nothing to commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"discover"}, tc.args...)...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
		})
	}
}

func TestHelpOfDiscoverAndAgent(t *testing.T) {
	candidates := []string{"signalk", "signalk-token-file", "signalk-ca", "selection", "settle", "interval", "log-format",
		"store", "vessel", "url", "ca", "cert", "key", "token-file", "receiver-v2", "timeout", "give-up-after", "json"}
	for name, want := range map[string][]string{
		"discover": {"signalk", "signalk-token-file", "signalk-ca", "selection", "settle"},
		"agent": {"signalk", "signalk-token-file", "signalk-ca", "selection", "settle", "interval", "log-format",
			"store", "vessel", "url", "ca", "cert", "key", "token-file", "receiver-v2", "timeout"},
	} {
		r := cli(t, "", "help", name)
		require.Equal(t, exitOK, r.code)
		assert.Contains(t, r.stdout, "Usage: sourcecatalog "+name+" --signalk URL")
		assert.Contains(t, r.stdout, "Exit status: 0")
		c := lookup(name)
		var known []string
		for _, f := range candidates {
			r := cli(t, "", name, "--"+f+"=x", "--nosuchflag")
			require.Equal(t, exitUsage, r.code)
			if !strings.Contains(r.stderr, `unknown flag "--`+f+`"`) {
				known = append(known, f)
			}
		}
		assert.Equal(t, want, known, "the flags %s takes", name)
		for _, f := range known {
			assert.Contains(t, c.help, "  --"+f+" ", "help %s documents --%s", name, f)
			assert.Contains(t, c.synopsis, "--"+f, "synopsis of %s names --%s", name, f)
		}
		listed := cli(t, "", "help")
		assert.Contains(t, listed.stdout, "  sourcecatalog "+name+" --signalk URL")
	}
}

func TestAgentRefuses(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "boat.db")
	empty := writeFile(t, dir, "empty", []byte("\n"))
	const sk, u = "http://127.0.0.1:1", "https://127.0.0.1:1/v2/messages"
	base := func(extra ...string) []string {
		return append([]string{"agent", "--signalk", sk, "--store", db, "--vessel", vesselFlag, "--url", u}, extra...)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no signalk", []string{"agent", "--store", db, "--vessel", vesselFlag, "--url", u}, exitUsage, "--signalk is required"},
		{"no store", []string{"agent", "--signalk", sk, "--vessel", vesselFlag, "--url", u}, exitUsage, "--store is required"},
		{"memory store", []string{"agent", "--signalk", sk, "--store", "memory", "--vessel", vesselFlag, "--url", u}, exitUsage, "--store memory keeps no outbox"},
		{"no vessel", []string{"agent", "--signalk", sk, "--store", db, "--url", u}, exitUsage, "--vessel is required"},
		{"no url", []string{"agent", "--signalk", sk, "--store", db, "--vessel", vesselFlag}, exitUsage, "--url is required"},
		{"http url", []string{"agent", "--signalk", sk, "--store", db, "--vessel", vesselFlag, "--url", "http://127.0.0.1:1/"}, exitUsage, "--url must be an https URL"},
		{"argument", base("extra"), exitUsage, `unexpected argument "extra": agent takes no arguments`},
		{"zero interval", base("--interval", "0s"), exitUsage, "--interval must be a positive duration"},
		{"log format", base("--log-format", "xml"), exitUsage, "--log-format must be text or json"},
		{"give-up-after", base("--give-up-after", "1m"), exitUsage, `unknown flag "--give-up-after"`},
		{"cert and token", base("--cert", empty, "--key", empty, "--token-file", empty), exitUsage, "exclude each other"},
		{"signalk token", base("--signalk-token-file", empty), exitInvalid, "--signalk-token-file: "},
		{"receiver token", base("--token-file", empty), exitInvalid, "--token-file: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
		})
	}
}
