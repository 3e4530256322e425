package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/fleetload"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

const (
	nginxRecipe   = "nginx/sourcecatalog.conf"
	vesselHeader  = "X-Sourcecatalog-Vessel"
	proxySecret   = "2f0c8d1e6b5a49f7a3c2e1d0b9a8f7e6" // the test's; a deployment draws its own
	recipeSecrets = "/etc/nginx/sourcecatalog-proxy-secret.conf"
)

// The README shows the nginx recipe as the file ships it.
func TestNginxRecipeInReadme(t *testing.T) {
	recipe := readFile(t, nginxRecipe)
	if !strings.Contains(readFile(t, "../README.md"), "```nginx\n"+recipe+"```\n") {
		t.Errorf("README.md has no nginx block equal to %s", nginxRecipe)
	}
}

// The nginx recipe in front of serve --trusted-proxy: a vessel with its
// certificate reads the declaration and publishes a snapshot that is
// activated; a client without a certificate of the fleet CA, or whose
// certificate names no vessel, is refused; the vessel and secret headers
// a client sends are replaced, so that it is taken as its certificate's
// vessel; serve, not nginx, answers a body of its limit and one over it;
// serve refuses the header without the secret.
func TestNginxIngress(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds serve and runs it behind nginx")
	}
	nginx := tool(t, "nginx", "/usr/sbin/nginx")
	goTool := tool(t, "go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "sourcecatalog")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/sourcecatalog").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pki := newPKI(t, dir)
	serve := startServe(t, bin, dir)
	addr := startNginx(t, nginx, dir, serve.Addr)
	url := "https://" + addr + "/"
	v, other := examples.VesselID, uuid.MustParse("0b7e3c1a-5d2f-4e8a-9c6b-1f2e3d4c5b6a")

	t.Run("declaration", func(t *testing.T) {
		status, body := do(t, pki.client(pki.vessel), http.MethodGet, url, nil, nil)
		if status != http.StatusOK || !strings.Contains(body, `"yachtmemory.source-catalog.v2"`) {
			t.Errorf("GET: %d %s, want 200 and the declaration", status, body)
		}
	})
	t.Run("publish", func(t *testing.T) {
		boat := "sqlite:" + filepath.Join(dir, "boat.db")
		run(t, bin, "commit", "--store", boat, "--vessel", v.String(), "../examples/example_records.json")
		run(t, bin, "publish", "--store", boat, "--vessel", v.String(), "--url", url, "--ca", pki.files["fleet-ca.pem"],
			"--cert", pki.files["vessel.pem"], "--key", pki.files["vessel.key"], "--receiver-v2=auto")
		_, metrics := do(t, http.DefaultClient, http.MethodGet, "http://"+serve.Admin+"/metrics", nil, nil)
		for _, want := range []string{`sourcecatalog_finalize_total{outcome="activated"} 1`,
			`sourcecatalog_last_activation_timestamp_seconds{vessel="` + v.String() + `"}`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("no %s in the metrics:\n%s", want, metrics)
			}
		}
	})
	// What a client may send to pass for another vessel, or for nginx.
	forged := http.Header{}
	forged.Add(vesselHeader, "urn:uuid:"+other.String())
	forged.Add(strings.ToLower(vesselHeader), "urn:uuid:"+other.String())
	forged.Add(httpbinding.DefaultProxySecretHeader, proxySecret)
	forged.Add("Authorization", "Bearer forged")
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			client *http.Client
			want   int
		}{
			{"no certificate", pki.client(), http.StatusBadRequest},
			{"another CA's certificate", pki.client(pki.foreign), http.StatusBadRequest},
			{"a certificate without CN=<vessel>", pki.client(pki.unnamed), http.StatusForbidden},
		} {
			for _, h := range []http.Header{nil, forged} {
				if status, body := do(t, tc.client, http.MethodGet, url, h, nil); status != tc.want {
					t.Errorf("%s, forged headers %t: %d %s, want %d", tc.name, h != nil, status, body, tc.want)
				}
			}
		}
	})
	t.Run("forged headers", func(t *testing.T) {
		c := pki.client(pki.vessel)
		// A message of the forged vessel is foreign to the certificate's.
		if status, body := do(t, c, http.MethodPost, url, forged, message(t, other)); status != http.StatusForbidden || !strings.Contains(body, "foreign_vessel") {
			t.Errorf("a message of the forged vessel: %d %s, want 403 foreign_vessel", status, body)
		}
		// One of the certificate's vessel is staged.
		if status, body := do(t, c, http.MethodPost, url, forged, message(t, v)); status != http.StatusOK || !strings.Contains(body, `"staged"`) {
			t.Errorf("a message of the certificate's vessel: %d %s, want 200 staged", status, body)
		}
	})
	t.Run("body limit", func(t *testing.T) {
		// serve, not nginx, answers a body of its limit and one over it.
		c := pki.client(pki.vessel)
		for _, tc := range []struct {
			size   int
			status int
			class  string
		}{{httpbinding.MaxRequestBody, http.StatusUnprocessableEntity, "malformed_json"}, {httpbinding.MaxRequestBody + 1, http.StatusRequestEntityTooLarge, "limit_exceeded"}} {
			body := bytes.Repeat([]byte(" "), tc.size)
			body[0] = '['
			if status, answer := do(t, c, http.MethodPost, url, nil, body); status != tc.status || !strings.Contains(answer, tc.class) {
				t.Errorf("a body of %d bytes: %d %s, want serve's %d %s", tc.size, status, answer, tc.status, tc.class)
			}
		}
	})
	t.Run("serve without the secret", func(t *testing.T) {
		for _, secret := range []string{"", "a-wrong-secret-of-32-characters!"} {
			h := http.Header{vesselHeader: {"urn:uuid:" + v.String()}}
			if secret != "" {
				h.Set(httpbinding.DefaultProxySecretHeader, secret)
			}
			if status, body := do(t, http.DefaultClient, http.MethodGet, "http://"+serve.Addr+"/", h, nil); status != http.StatusUnauthorized {
				t.Errorf("secret %q: %d %s, want 401", secret, status, body)
			}
		}
	})
}

// pki are the certificates of the test, and their files in a directory.
type pki struct {
	roots                    *x509.CertPool
	vessel, unnamed, foreign tls.Certificate
	files                    map[string]string
}

// newPKI writes the fleet CA, nginx's server certificate, a vessel's
// certificate as README.md's openssl lines issue it (CN and URI SAN) and
// the proxy secret into dir.
func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	ca, err := testpki.NewCA("fleet CA")
	must(t, err)
	other, err := testpki.NewCA("another CA")
	must(t, err)
	p := &pki{roots: x509.NewCertPool(), files: map[string]string{}}
	p.roots.AddCert(ca.Cert)
	server, err := ca.Server()
	must(t, err)
	vessel := examples.VesselID
	p.vessel, err = ca.Issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: vessel.String()}, URIs: []*url.URL{testpki.VesselURI(vessel)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	must(t, err)
	p.unnamed, err = ca.Vessel(vessel) // the URI SAN, but CN=vessel
	must(t, err)
	p.foreign, err = other.Issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: vessel.String()}, URIs: []*url.URL{testpki.VesselURI(vessel)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	must(t, err)
	write := func(name string, data []byte) {
		p.files[name] = filepath.Join(dir, name)
		must(t, os.WriteFile(p.files[name], data, 0o600))
	}
	write("fleet-ca.pem", ca.CertPEM())
	for name, c := range map[string]tls.Certificate{"server": server, "vessel": p.vessel} {
		certPEM, keyPEM, err := testpki.PEM(c)
		must(t, err)
		write(name+".pem", certPEM)
		write(name+".key", keyPEM)
	}
	write("proxy.secret", []byte(proxySecret+"\n"))
	write("proxy-secret.conf", []byte(fmt.Sprintf("proxy_set_header %s %q;\n", httpbinding.DefaultProxySecretHeader, proxySecret)))
	return p
}

// client returns a client trusting the fleet CA that presents cert, if
// any, whichever CAs nginx asks for.
func (p *pki) client(cert ...tls.Certificate) *http.Client {
	c := &tls.Config{RootCAs: p.roots}
	if len(cert) == 1 {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
}

// startServe runs serve behind a trusted proxy on 127.0.0.1, over plain
// HTTP, with the secret, and stops it at the end of the test.
func startServe(t *testing.T, bin, dir string) *fleetload.Process {
	t.Helper()
	p, err := fleetload.Start(bin, []string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--store", "sqlite:" + filepath.Join(dir, "shore.db"), "--create-store", "--retain", "8", "--log-format", "json",
		"--trusted-proxy", "127.0.0.1", "--trusted-proxy-header", vesselHeader,
		"--trusted-proxy-secret-file", filepath.Join(dir, "proxy.secret")}, fleetload.StartOptions{Admin: true})
	must(t, err)
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stopping serve: %v; its log:\n%s", err, p.Log())
		}
	})
	return p
}

// startNginx runs nginx in the foreground with the recipe, its ports and
// files those of the test, in front of serve at upstream; it returns the
// address nginx listens on, and stops it at the end of the test.
func startNginx(t *testing.T, nginx, dir, upstream string) string {
	t.Helper()
	addr := freeAddr(t)
	recipe := readFile(t, nginxRecipe)
	for _, r := range [][2]string{
		{"listen 8443 ssl;", "listen " + addr + " ssl;"},
		{"http://127.0.0.1:8080;", "http://" + upstream + ";"},
		{"/etc/sourcecatalog/server.pem;", filepath.Join(dir, "server.pem") + ";"},
		{"/etc/sourcecatalog/server.key;", filepath.Join(dir, "server.key") + ";"},
		{"/etc/sourcecatalog/fleet-ca.pem;", filepath.Join(dir, "fleet-ca.pem") + ";"},
		{recipeSecrets + ";", filepath.Join(dir, "proxy-secret.conf") + ";"},
	} {
		if n := strings.Count(recipe, r[0]); n != 1 {
			t.Fatalf("%s has %q %d times, want once", nginxRecipe, r[0], n)
		}
		recipe = strings.Replace(recipe, r[0], r[1], 1)
	}
	prefix := filepath.Join(dir, "nginx")
	must(t, os.MkdirAll(prefix, 0o700))
	must(t, os.WriteFile(filepath.Join(prefix, "sourcecatalog.conf"), []byte(recipe), 0o600))
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // the workers read the test's files
	}
	main := fmt.Sprintf(`%sworker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 64; }
http {
    access_log %[2]s/access.log;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[2]s/sourcecatalog.conf;
}
`, user, prefix)
	conf := filepath.Join(prefix, "nginx.conf")
	must(t, os.WriteFile(conf, []byte(main), 0o600))
	var out bytes.Buffer
	cmd := exec.Command(nginx, "-p", prefix+"/", "-c", conf, "-e", filepath.Join(prefix, "error.log"), "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	errorLog := func() string {
		b, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
		return out.String() + string(b)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // finish the requests, then exit
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("nginx's log:\n%s", errorLog())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("nginx exited: %v\n%s", err, errorLog())
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not listening on %s after 20 s\n%s", addr, errorLog())
		}
	}
}

// freeAddr returns a loopback address that nobody listened on a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().String()
}

// message returns the body of the first request a publisher sends for
// vessel: the example boat committed to an outbox in memory.
func message(t *testing.T, vessel uuid.UUID) []byte {
	t.Helper()
	ctx := context.Background()
	st := memstore.New()
	_, err := outbox.NewWriter(st).Commit(ctx, outbox.NewCycle(vessel, time.Now(), examples.Boat()))
	must(t, err)
	c := &capture{}
	outbox.NewPublisher(st, vessel, c, outbox.WithReceiverV2(true)).Publish(ctx)
	if len(c.sent) == 0 {
		t.Fatal("the publisher sent nothing")
	}
	e := c.sent[0]
	return envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)
}

// capture is an outbox.Transport that keeps what is sent and fails.
type capture struct{ sent []outbox.Entry }

func (c *capture) Send(_ context.Context, e outbox.Entry) (envelope.Receipt, error) {
	c.sent = append(c.sent, e)
	return envelope.Receipt{}, errors.New("captured")
}

// do sends a request with the header h and returns the answer's status
// and body.
func do(t *testing.T, c *http.Client, method, url string, h http.Header, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	must(t, err)
	for k, vs := range h {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", httpbinding.ContentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

// run runs the command, failing the test with its output when it fails.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args[:1], " "), err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
