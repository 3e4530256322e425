package agentcost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// An Ashore is a receiver as `sourcecatalog serve` runs one — receiver.New
// on SQLite, HTTP/2 over TLS (httpbinding.NewServer), a bearer token —
// for one vessel, in this process.
type Ashore struct {
	Vessel    uuid.UUID
	URL       string // the messages endpoint, for --url
	CAFile    string // for --ca
	TokenFile string // for --token-file
	svc       *receiver.Service
	srv       *http.Server
	stop      context.CancelFunc
}

// StartAshore starts an Ashore keeping its files in dir. The caller must
// Close it.
func StartAshore(ctx context.Context, dir string) (_ *Ashore, err error) {
	a := &Ashore{Vessel: uuid.New()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	ca, err := testpki.NewCA("agentcost")
	if err != nil {
		return nil, err
	}
	cert, err := ca.Server()
	if err != nil {
		return nil, err
	}
	a.CAFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(a.CAFile, ca.CertPEM(), 0o600); err != nil {
		return nil, err
	}
	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	token := hex.EncodeToString(raw)
	a.TokenFile = filepath.Join(dir, "vessel.token")
	if err := os.WriteFile(a.TokenFile, []byte(token+"\n"), 0o600); err != nil {
		return nil, err
	}
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, a.Vessel) + "\n"))
	if err != nil {
		return nil, err
	}
	a.svc, err = receiver.New(ctx, receiver.Config{
		Store: sqlitestore.Source(filepath.Join(dir, "receiver.db")), Retention: receiver.Keep(8),
		Auth: tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stop
	go func() { _ = a.svc.Run(runCtx) }()
	a.srv, err = httpbinding.NewServer("", a.svc.Handler(), httpbinding.ServerTLSConfig(cert, nil), httpbinding.Timeouts{}, nil)
	if err != nil {
		return nil, err
	}
	a.srv.ErrorLog = nil
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = a.srv.ServeTLS(ln, "", "") }()
	a.URL = "https://" + ln.Addr().String() + "/v2/messages"
	return a, nil
}

// Close stops the server and closes the receiver's store.
func (a *Ashore) Close() error {
	var errs []error
	if a.srv != nil {
		errs = append(errs, a.srv.Close())
	}
	if a.stop != nil {
		a.stop()
	}
	if a.svc != nil {
		errs = append(errs, a.svc.Close())
	}
	return errors.Join(errs...)
}

// ErrNoActive is Active's error while the vessel has no active snapshot.
var ErrNoActive = errors.New("agentcost: the vessel has no active snapshot")

// Active returns the first page of the vessel's active snapshot's
// inventory, with its item count and document hash, or ErrNoActive.
func (a *Ashore) Active() (inventory.Page, error) { return a.page("limit=1") }

// page returns the inventory page of query q, or ErrNoActive.
func (a *Ashore) page(q string) (inventory.Page, error) {
	rec := httptest.NewRecorder()
	a.svc.Admin().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/vessels/"+a.Vessel.String()+"/inventory?"+q, nil))
	var page inventory.Page
	switch rec.Code {
	case http.StatusOK:
	case http.StatusNotFound:
		return page, ErrNoActive
	default:
		return page, fmt.Errorf("agentcost: the receiver's inventory answered %d: %s", rec.Code, rec.Body.Bytes())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		return page, fmt.Errorf("agentcost: the receiver's inventory: %w", err)
	}
	return page, nil
}

// Has reports whether the active snapshot holds a record of path,
// reading the inventory page by page.
func (a *Ashore) Has(path string) (bool, error) {
	q := "limit=" + strconv.Itoa(inventory.MaxPageItems)
	for {
		page, err := a.page(q)
		if err != nil {
			return false, err
		}
		for _, it := range page.Items {
			if it.Path == path {
				return true, nil
			}
		}
		if page.NextCursor == "" {
			return false, nil
		}
		q = "limit=" + strconv.Itoa(inventory.MaxPageItems) + "&cursor=" + url.QueryEscape(page.NextCursor)
	}
}
