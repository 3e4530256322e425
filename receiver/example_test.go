package receiver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// mount is README.md's "Embedding the receiver and the sender in your service", line
// for line (TestReadmeEmbedding).
func mount(ctx context.Context, mux, admin *http.ServeMux, path, secret string) (*receiver.Service, error) {
	metrics, err := prommetrics.New(prometheus.NewRegistry()) // or your service's registry
	if err != nil {
		return nil, err
	}
	auth, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{
		Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, // where the ingress connects from
		Header:  "X-Client-Cert-Uri",                                  // urn:uuid:<vessel>, the certificate's SAN
		Secret:  secret,                                               // required off loopback
	})
	if err != nil {
		return nil, err
	}
	svc, err := receiver.New(ctx, receiver.Config{
		Store:     sqlitestore.Source(path), // healed: reopened after an I/O error or a full disk
		Retention: receiver.Keep(8),         // required: Keep(0 to 32) or KeepAll()
		Auth:      auth,
		Metrics:   metrics, // optional; /metrics serves it
		Logger:    slog.Default(),
	})
	if err != nil {
		return nil, err
	}
	mux.Handle("/v2/messages", svc.Handler()) // every method: GET declares (SPEC.md §11.7), POST stages
	admin.Handle("/", svc.Admin())            // /healthz, /metrics, /vessels/{id}/inventory and …/history
	go svc.Run(ctx)                           // the reconciler (SPEC.md §8.6); svc.Close() when done
	return svc, nil
}

// A receiver mounted in a service's muxes, behind an ingress on
// 10.0.0.0/24: the admin routes answer, and the message route refuses a
// request that does not come through the ingress.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "receiver-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	mux, admin := http.NewServeMux(), http.NewServeMux()
	svc, err := mount(ctx, mux, admin, filepath.Join(dir, "catalog.db"), "the-ingress-secret-0123456789")
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	for _, h := range []struct {
		name string
		mux  *http.ServeMux
		path string
	}{{"healthz", admin, "/healthz"}, {"declaration, not through the ingress", mux, "/v2/messages"}} {
		rec := httptest.NewRecorder()
		h.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, h.path, nil))
		fmt.Println(h.name+":", rec.Code)
	}
	// Output:
	// healthz: 200
	// declaration, not through the ingress: 401
}

// README.md's embedding snippet is mount, which compiles and runs here.
func TestReadmeEmbedding(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	section := regexp.MustCompile("(?s)## Embedding the receiver and the sender in your service\n.*?```go\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, section, "no Go block in README.md's embedding section")
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	fn := regexp.MustCompile(`(?s)\nfunc mount\(.*?\n}\n`).Find(src)
	require.NotNil(t, fn)
	require.Equal(t, strings.TrimSpace(string(fn)), strings.TrimSpace(string(section[1])), "README.md's snippet differs from mount")
}
