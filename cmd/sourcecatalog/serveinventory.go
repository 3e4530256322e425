package main

import (
	"log/slog"
	"net/http"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
)

// adminPaths are the admin listener's paths, for the log.
const adminPaths = "/healthz /metrics /vessels/{vessel}/inventory /vessels/{vessel}/history"

// withInventory serves the inventory handler's paths, /vessels/…, beside
// admin's.
func withInventory(admin http.Handler, recv *finalize.Receiver, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/vessels/", inventory.NewHandler(recv, inventory.WithErrorLog(func(err error) {
		log.Warn("inventory: the store failed", "err", err)
	})))
	mux.Handle("/", admin)
	return mux
}
