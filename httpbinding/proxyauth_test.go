package httpbinding_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

const (
	identityHeader = "X-Vessel-Identity"
	proxySecret    = "a-shared-secret-of-the-proxy-0123"
)

// proxyAddr is the loopback address the proxy connects from, and the only
// one the receiver trusts: every other local client connects from
// 127.0.0.1.
var proxyAddr = netip.MustParseAddr("127.0.0.2")

// A proxyRig is a receiver served over plain HTTP on loopback, trusting
// a proxy that terminates mutual TLS in front of it: a Go
// httputil.ReverseProxy that verifies the vessel's certificate, drops the
// identity, secret and Authorization headers a client sent, and forwards
// the certificate's URI SANs in the identity header, with the secret,
// from proxyAddr.
type proxyRig struct {
	ca       *testCA
	recv     *finalize.Receiver
	events   *eventLog
	receiver string // http://127.0.0.1:port/
	proxy    string // https://127.0.0.1:port/v2/messages
}

// startProxyRig starts the rig; forwardAuthorization makes the proxy
// pass the client's Authorization header on, as a misconfigured one
// would.
func startProxyRig(t *testing.T, forwardAuthorization bool) *proxyRig {
	t.Helper()
	r := &proxyRig{ca: newCA(t, "operator CA"), events: &eventLog{}}
	r.recv = finalize.NewReceiver(memstore.New())
	auth, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{
		Proxies: []netip.Prefix{netip.PrefixFrom(proxyAddr, 32)}, Header: identityHeader, Secret: proxySecret,
	})
	require.NoError(t, err)
	srv := httpbinding.NewInsecureServer("", httpbinding.NewHandler(r.recv, auth, httpbinding.WithObserver(r.events.observe)), httpbinding.Timeouts{}, log.New(io.Discard, "", 0))
	r.receiver = serveOnLoopback(t, srv, false)

	target, err := url.Parse(r.receiver)
	require.NoError(t, err)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: proxyAddr.AsSlice()}, Timeout: 5 * time.Second}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del(identityHeader)
			pr.Out.Header.Del(httpbinding.DefaultProxySecretHeader)
			if !forwardAuthorization {
				pr.Out.Header.Del("Authorization")
			}
			if pr.In.TLS != nil && len(pr.In.TLS.VerifiedChains) > 0 {
				for _, u := range pr.In.TLS.PeerCertificates[0].URIs {
					pr.Out.Header.Add(identityHeader, u.String())
				}
			}
			pr.Out.Header.Set(httpbinding.DefaultProxySecretHeader, proxySecret)
		},
		Transport: &http.Transport{DialContext: dialer.DialContext},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	tc := httpbinding.ServerTLSConfig(r.ca.server(t), r.ca.pool)
	tc.ClientAuth = tls.VerifyClientCertIfGiven // the proxy verifies; without a certificate, no identity
	front := &http.Server{Handler: proxy, TLSConfig: tc, ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second}
	r.proxy = serveOnLoopback(t, front, true) + "v2/messages"
	return r
}

// serveOnLoopback serves srv on a loopback port until the test ends and
// returns its base URL.
func serveOnLoopback(t *testing.T, srv *http.Server, useTLS bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		if useTLS {
			done <- srv.ServeTLS(ln, "", "")
		} else {
			done <- srv.Serve(ln)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	return scheme + "://" + ln.Addr().String() + "/"
}

// send posts body to url with the header, over a client presenting cert
// (nil: none) and connecting from local (nil: the system's choice).
func (r *proxyRig) send(t *testing.T, url string, cert *tls.Certificate, local net.IP, header http.Header, body []byte) (int, string) {
	t.Helper()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if local != nil {
		dialer.LocalAddr = &net.TCPAddr{IP: local}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: httpbinding.ClientTLSConfig(r.ca.pool, cert), DialContext: dialer.DialContext,
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	require.NoError(t, err)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestTrustedProxy publishes through a reverse proxy terminating mutual
// TLS, and tries to spoof the identity header every way round it: directly
// to the receiver, through the proxy without a certificate or with
// another vessel's name, with the header twice, and with an
// Authorization header the proxy forwards in clear. Only the proxy's
// verified identity ever stages a message.
func TestTrustedProxy(t *testing.T) {
	ctx := context.Background()
	r := startProxyRig(t, false)
	certA := r.ca.vessel(t, vesselA)

	// A whole cycle through the proxy, with the library's Client.
	c, err := httpbinding.NewClient(r.proxy, httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(r.ca.pool, &certA)), httpbinding.WithTimeout(10*time.Second))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 120)
	pass, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
	require.NoError(t, err)
	assert.Equal(t, outbox.Pass{Sent: 4, Delivered: 4}, noBytes(pass))
	active, err := r.recv.Active(ctx, vesselA)
	require.NoError(t, err)
	assert.Equal(t, b.snapID, active.SnapshotID, "activated as the proxy's vessel")

	ofB := wrap(commitCycle(t, vesselB, uuid.Nil, "nav", 1).entries[0])
	ofA := wrap(commitCycle(t, vesselA, uuid.Nil, "other", 1).entries[0])
	spoofB := http.Header{identityHeader: {"urn:uuid:" + vesselB.String()}, httpbinding.DefaultProxySecretHeader: {proxySecret}}
	loopback := net.ParseIP("127.0.0.1")
	otherCA := newCA(t, "another CA").vessel(t, vesselB)
	twoSANs := r.ca.clientWith(t, testpki.VesselURI(vesselA), testpki.VesselURI(vesselB))
	cases := []struct {
		name   string
		url    string
		cert   *tls.Certificate
		local  net.IP
		header http.Header
		body   []byte
		status int
	}{
		{"direct, spoofing the header and the secret", r.receiver, nil, loopback, spoofB, ofB, 401},
		{"direct, without the header", r.receiver, nil, loopback, nil, ofB, 401},
		{"through the proxy without a certificate", r.proxy, nil, nil, spoofB, ofB, 401},
		{"through the proxy with a certificate of another CA", r.proxy, &otherCA, nil, spoofB, ofB, 401},
		{"through the proxy as A, naming B", r.proxy, &certA, nil, spoofB, ofB, 403},
		{"through the proxy as A, the header twice", r.proxy, &certA, nil, http.Header{identityHeader: {"urn:uuid:" + vesselB.String(), "urn:uuid:" + vesselB.String()}}, ofB, 403},
		{"a certificate naming two vessels, forwarded as two values", r.proxy, &twoSANs, nil, nil, ofA, 401},
		{"through the proxy as A with a bearer token", r.proxy, &certA, nil, http.Header{"Authorization": {"Bearer tok"}}, ofA, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.events.of(httpbinding.EventMessage))
			status, body := r.send(t, tc.url, tc.cert, tc.local, tc.header, tc.body)
			require.Equal(t, tc.status, status, "answer %q", body)
			ev := r.events.of(httpbinding.EventMessage)
			require.Len(t, ev, before+1, "the receiver answered the request itself")
			if tc.status == 401 {
				require.Equal(t, "Unauthorized\n", body, "a proxy refusal says nothing of why")
				require.ErrorIs(t, ev[before].Err, sourcecatalog.ErrInvalidValue)
			}
			if tc.status == 403 {
				require.Equal(t, vesselA, ev[before].Vessel, "the proxy's verified identity, not the client's header")
			}
		})
	}
	u, err := r.recv.Usage(ctx, vesselB)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used+u.RetainedSnapshots.Used, "nothing was ever staged for B")

	// A proxy that forwards the client's Authorization header over plain
	// HTTP sends a credential in clear: 401 (SPEC.md §11.2).
	leaky := startProxyRig(t, true)
	leakyA := leaky.ca.vessel(t, vesselA)
	status, _ := leaky.send(t, leaky.proxy, &leakyA, nil, http.Header{"Authorization": {"Bearer tok"}}, ofA)
	require.Equal(t, 401, status, "an Authorization header forwarded without TLS")
	status, _ = leaky.send(t, leaky.proxy, &leakyA, nil, nil, ofA)
	require.Equal(t, 200, status, "the same proxy without Authorization")
}

// TestTrustedProxyHeader holds Authenticate to its rules on requests made
// by hand: the address, the secret, and the one well-formed identity.
func TestTrustedProxyHeader(t *testing.T) {
	auth, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{
		Proxies: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24"), netip.MustParsePrefix("fd00::/64")},
		Header:  "x-vessel-identity", Secret: proxySecret, SecretHeader: "X-Proxy-Secret",
	})
	require.NoError(t, err)
	a := "urn:uuid:" + vesselA.String()
	cases := []struct {
		name     string
		remote   string
		identity []string
		secret   []string
		want     error // nil: authenticated as vesselA
	}{
		{"from the proxy", "10.1.2.3:5000", []string{a}, []string{proxySecret}, nil},
		{"from the proxy over IPv6", "[fd00::7]:5000", []string{a}, []string{proxySecret}, nil},
		{"IPv4-mapped IPv6", "[::ffff:10.1.2.3]:5000", []string{a}, []string{proxySecret}, nil},
		{"URN in upper case", "10.1.2.3:5000", []string{"URN:UUID:" + vesselA.String()}, []string{proxySecret}, nil},
		{"from elsewhere", "10.1.3.3:5000", []string{a}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"from elsewhere, no header", "10.1.3.3:5000", nil, []string{proxySecret}, httpbinding.ErrNoCredentials},
		{"an unparsable remote address", "proxy:5000", []string{a}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"no secret", "10.1.2.3:5000", []string{a}, nil, httpbinding.ErrBadCredentials},
		{"a wrong secret", "10.1.2.3:5000", []string{a}, []string{strings.ToUpper(proxySecret)}, httpbinding.ErrBadCredentials},
		{"the secret twice", "10.1.2.3:5000", []string{a}, []string{proxySecret, proxySecret}, httpbinding.ErrBadCredentials},
		{"no identity", "10.1.2.3:5000", nil, []string{proxySecret}, httpbinding.ErrNoCredentials},
		{"the identity twice", "10.1.2.3:5000", []string{a, a}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"an empty identity", "10.1.2.3:5000", []string{""}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"a bare UUID", "10.1.2.3:5000", []string{vesselA.String()}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"an upper-case UUID", "10.1.2.3:5000", []string{"urn:uuid:" + strings.ToUpper(vesselA.String())}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"two vessels in one value", "10.1.2.3:5000", []string{a + ", urn:uuid:" + vesselB.String()}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"a query", "10.1.2.3:5000", []string{a + "?x=1"}, []string{proxySecret}, httpbinding.ErrBadCredentials},
		{"the nil UUID", "10.1.2.3:5000", []string{"urn:uuid:" + uuid.Nil.String()}, []string{proxySecret}, httpbinding.ErrBadCredentials},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "http://receiver/", nil)
			req.RemoteAddr = tc.remote
			for _, v := range tc.identity {
				req.Header.Add("X-Vessel-Identity", v)
			}
			for _, v := range tc.secret {
				req.Header.Add("X-Proxy-Secret", v)
			}
			o, err := auth.Authenticate(req)
			if tc.want == nil {
				require.NoError(t, err)
				require.Equal(t, vesselA, o.VesselID)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			require.Equal(t, finalize.Origin{}, o)
		})
	}
}

// TestTrustedProxyMappedPrefix: a proxy prefix spelled IPv4-mapped is the
// IPv4 prefix it maps, matching a remote address in either spelling, and
// one over the whole mapped range trusts every IPv4 address: refused.
func TestTrustedProxyMappedPrefix(t *testing.T) {
	auth, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{
		Proxies: []netip.Prefix{netip.MustParsePrefix("::ffff:10.1.2.0/120")}, Header: "X-Vessel-Identity", Secret: proxySecret,
	})
	require.NoError(t, err)
	for _, remote := range []string{"10.1.2.3:5000", "[::ffff:10.1.2.3]:5000", "10.1.3.3:5000"} {
		req := httptest.NewRequest(http.MethodPost, "http://receiver/", nil)
		req.RemoteAddr = remote
		req.Header.Set("X-Vessel-Identity", "urn:uuid:"+vesselA.String())
		req.Header.Set(httpbinding.DefaultProxySecretHeader, proxySecret)
		o, err := auth.Authenticate(req)
		if remote == "10.1.3.3:5000" {
			require.ErrorIs(t, err, httpbinding.ErrBadCredentials, "outside the prefix")
			continue
		}
		require.NoError(t, err, remote)
		require.Equal(t, vesselA, o.VesselID)
	}
	for prefix, want := range map[string]string{
		"::ffff:0.0.0.0/96":   "trusts every address",
		"::ffff:0.0.0.0/95":   "spans IPv4-mapped and other IPv6 addresses",
		"::ffff:10.0.0.0/104": "is not loopback",
		"::ffff:10.1.2.3/120": "has host bits set",
	} {
		_, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix(prefix)}, Header: identityHeader})
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, prefix)
		require.ErrorContains(t, err, want, prefix)
	}
}

// TestNewTrustedProxyAccepts: a loopback prefix needs no secret; any
// other needs one, or the explicit InsecureNoSecret.
func TestNewTrustedProxyAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    httpbinding.ProxyConfig
	}{
		{"127.0.0.1/32 without a secret", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Header: identityHeader}},
		{"IPv4-mapped loopback without a secret", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.1/128")}, Header: identityHeader}},
		{"127.0.0.0/8 and ::1 without a secret", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, Header: identityHeader}},
		{"10.0.0.0/24 with a secret", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, Header: identityHeader, Secret: proxySecret}},
		{"10.0.0.0/24 insecurely without one", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, Header: identityHeader, InsecureNoSecret: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := httpbinding.NewTrustedProxy(tc.c)
			require.NoError(t, err)
			require.NotNil(t, p)
		})
	}
}

// TestNewTrustedProxyRefuses: a configuration that would trust too much or
// cannot work is refused, naming the problem.
func TestNewTrustedProxyRefuses(t *testing.T) {
	lo := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	cases := []struct {
		name string
		c    httpbinding.ProxyConfig
		want string
	}{
		{"no proxy", httpbinding.ProxyConfig{Header: identityHeader}, "no proxy address"},
		{"every address", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}, Header: identityHeader}, "trusts every address"},
		{"host bits", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}, Header: identityHeader}, "did you mean 10.0.0.0/8"},
		{"invalid prefix", httpbinding.ProxyConfig{Proxies: []netip.Prefix{{}}, Header: identityHeader}, "invalid proxy prefix"},
		{"no header", httpbinding.ProxyConfig{Proxies: lo}, "not an HTTP field name"},
		{"a header with a space", httpbinding.ProxyConfig{Proxies: lo, Header: "X Vessel"}, "not an HTTP field name"},
		{"a header with an underscore", httpbinding.ProxyConfig{Proxies: lo, Header: "X_Vessel"}, "not an HTTP field name"},
		{"Authorization", httpbinding.ProxyConfig{Proxies: lo, Header: "authorization"}, "must not be Authorization"},
		{"Content-Type", httpbinding.ProxyConfig{Proxies: lo, Header: "Content-Type"}, "must not be Content-Type"},
		{"a short secret", httpbinding.ProxyConfig{Proxies: lo, Header: identityHeader, Secret: "short"}, "visible ASCII"},
		{"a secret with a space", httpbinding.ProxyConfig{Proxies: lo, Header: identityHeader, Secret: "a secret with spaces in it"}, "visible ASCII"},
		{"the same header twice", httpbinding.ProxyConfig{Proxies: lo, Header: identityHeader, Secret: proxySecret, SecretHeader: strings.ToLower(identityHeader)}, "must differ"},
		{"a secret header alone", httpbinding.ProxyConfig{Proxies: lo, Header: identityHeader, SecretHeader: "X-Secret"}, "without a secret"},
		{"a private prefix without a secret", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, Header: identityHeader}, "10.0.0.0/24 is not loopback: give the proxy a Secret"},
		{"loopback and a private prefix without a secret", httpbinding.ProxyConfig{Proxies: append(lo, netip.MustParsePrefix("fd00::/64")), Header: identityHeader}, "fd00::/64 is not loopback"},
		{"a public prefix without a secret", httpbinding.ProxyConfig{Proxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, Header: identityHeader}, "192.0.2.0/24 is not loopback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := httpbinding.NewTrustedProxy(tc.c)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, p)
		})
	}
}
