// Command shore receives vessels' source catalogs behind an ingress that
// terminates mutual TLS: receiver.New with a SQLite store, the ingress's
// header and secret, Prometheus metrics, /healthz, the inventory and slog.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

func main() {
	var cfg receiver.Config
	flag.Var(&cfg.Retention, "retain", "finalized snapshots each vessel keeps: 0 to 32, or all (required)")
	db := flag.String("db", "shore.db", "the SQLite file of the store")
	proxy := flag.String("proxy", "10.0.0.0/24", "where the ingress connects from; its secret is $SHORE_PROXY_SECRET")
	listen := flag.String("listen", "127.0.0.1:8080", "the message route, for the ingress (plain HTTP)")
	admin := flag.String("admin", "127.0.0.1:9464", "/healthz, /metrics and /vessels/{id}/inventory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	prefix, err := netip.ParsePrefix(*proxy)
	check(err)
	cfg.Auth, err = httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{Proxies: []netip.Prefix{prefix},
		Header: "X-Client-Cert-Uri", Secret: os.Getenv("SHORE_PROXY_SECRET")})
	check(err)
	cfg.Metrics, err = prommetrics.New(prometheus.NewRegistry())
	check(err)
	cfg.Store, cfg.Logger = sqlitestore.Source(*db), slog.Default()
	routeLn, err := net.Listen("tcp", *listen)
	check(err)
	adminLn, err := net.Listen("tcp", *admin)
	check(err)
	svc, err := receiver.New(ctx, cfg) // fails unless -retain chose
	check(err)
	slog.Info("listening", "route", routeLn.Addr().String(), "admin", adminLn.Addr().String())
	err = svc.Serve(ctx, routeLn, adminLn)
	check(errors.Join(err, svc.Close()))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "shore:", err)
		os.Exit(1)
	}
}
