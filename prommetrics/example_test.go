package prommetrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
)

// The receiver embedded in a service exports serve's metrics: the
// Receiver's observer and the binding's observer (the Handler's and the
// Reconciler's) feed one Metrics, each event counted once.
func Example() {
	reg := prometheus.NewRegistry() // or prometheus.DefaultRegisterer
	m, err := prommetrics.New(reg)
	if err != nil {
		panic(err)
	}
	recv := finalize.NewReceiver(memstore.New(), finalize.WithObserver(m.ObserveReceiver))
	auth, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{
		Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Header:  "X-Client-Cert-Uri",
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v2/messages", httpbinding.NewHandler(recv, auth, httpbinding.WithObserver(m.ObserveBinding)))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	_ = httpbinding.Reconciler{Receiver: recv, Observer: m.ObserveBinding} // run with rc.Run(ctx)

	// A request without the proxy's header is refused, and counted.
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v2/messages", "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			fmt.Print(mf.GetName())
			for _, l := range s.GetLabel() {
				fmt.Printf(" %s=%s", l.GetName(), l.GetValue())
			}
			fmt.Println("", s.GetCounter().GetValue())
		}
	}
	// Output:
	// sourcecatalog_messages_total code=401 outcome=unauthenticated 1
}
