package sourcecatalog_test

// The error contract of errors.go: every error the module returns wraps
// exactly one class. TestErrorContract provokes each exported error through
// the public API and checks the class it wraps; TestErrorContractCoversAll
// parses the module's packages so that a new exported error without a case
// here fails.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
	"github.com/yachtmemory/sourcecatalog/signalk"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// An errCase provokes one error and says which class it must wrap.
type errCase struct {
	// provoke returns the error, made through the public API where that
	// needs no database server; for a detail sentinel or an injected fault,
	// the error of the operation that carries it.
	provoke func(t *testing.T) error
	// is reports whether the provoked error is the one the case names.
	is func(error) bool
	// class is the one class the provoked error wraps, or nil for a store
	// transaction's signal, which wraps none.
	class error
}

// errorCases are the exported errors of the module's packages, by package
// directory ("sourcecatalog" for the root) and name.
func errorCases() map[string]errCase {
	cases := map[string]errCase{
		// Package sourcecatalog: the classes, and the located error.
		"sourcecatalog.Error": {
			provoke: func(*testing.T) error { _, err := canonical.ParseDigest("ABC"); return err },
			is:      isType[*sourcecatalog.Error], class: sourcecatalog.ErrInvalidValue,
		},

		// Package canonical: detail sentinels, found inside a
		// *SyntaxError of class ErrMalformedJSON.
		"canonical.SyntaxError":         {provoke: parse(`{"a" 1}`), is: isType[*canonical.SyntaxError], class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrSyntax":           {provoke: parse(`{"a" 1}`), is: is(canonical.ErrSyntax), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrUnexpectedEnd":    {provoke: parse(`{"a":`), is: is(canonical.ErrUnexpectedEnd), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrDuplicateName":    {provoke: parse(`{"a":1,"a":2}`), is: is(canonical.ErrDuplicateName), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrInvalidUTF8":      {provoke: parse("\"\xff\""), is: is(canonical.ErrInvalidUTF8), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrInvalidSurrogate": {provoke: parse(`"\ud800"`), is: is(canonical.ErrInvalidSurrogate), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrInvalidNumber":    {provoke: parse(`01`), is: is(canonical.ErrInvalidNumber), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrLossyNumber":      {provoke: parse(`9007199254740993`), is: is(canonical.ErrLossyNumber), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrTooDeep":          {provoke: parse(strings.Repeat("[", 65) + strings.Repeat("]", 65)), is: is(canonical.ErrTooDeep), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrTrailingData":     {provoke: parse(`1 2`), is: is(canonical.ErrTrailingData), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrByteOrderMark":    {provoke: parse("\xef\xbb\xbf1"), is: is(canonical.ErrByteOrderMark), class: sourcecatalog.ErrMalformedJSON},
		"canonical.ErrInvalidFloat": {
			provoke: func(*testing.T) error { _, err := canonical.AppendFloat(nil, math.NaN()); return err },
			is:      is(canonical.ErrInvalidFloat), class: sourcecatalog.ErrInvalidValue,
		},

		// Package outbox.
		"outbox.ErrCapabilityOff": {
			provoke: func(t *testing.T) error {
				_, err := outbox.NewPublisher(outboxmem.New(), vesselID, nil).Publish(context.Background())
				return err
			},
			is: is(outbox.ErrCapabilityOff), class: sourcecatalog.ErrUnsupported,
		},
		"outbox.ErrReceiptMismatch": {
			provoke: func(t *testing.T) error {
				store := committed(t, outboxmem.New())
				p := outbox.NewPublisher(store, vesselID, wrongReceipts{}, outbox.WithReceiverV2(true))
				_, err := p.Publish(context.Background())
				return err
			},
			is: is(outbox.ErrReceiptMismatch), class: sourcecatalog.ErrIntegrity,
		},
		"outbox.ErrNeedsOperator": {
			provoke: func(t *testing.T) error { return send401(t) },
			is:      is(outbox.ErrNeedsOperator), class: sourcecatalog.ErrStoreUnavailable,
		},
		"sourcecatalog.ErrNotFound": {
			provoke: func(t *testing.T) error {
				ctx := context.Background()
				return outboxmem.New().WithVessel(ctx, vesselID, func(tx outbox.Tx) error {
					_, err := tx.Entries(ctx, uuid.New())
					return err
				})
			},
			is: is(sourcecatalog.ErrNotFound), class: nil,
		},
		// Package storeheal.
		"storeheal.ErrReopening": {
			provoke: func(t *testing.T) error {
				h := healed(t, errors.New("poisoned"))
				return storeheal.Receiver(h, healedStore).WithVessel(context.Background(), vesselID, func(finalize.Tx) error { return nil })
			},
			is: is(storeheal.ErrReopening), class: sourcecatalog.ErrStoreUnavailable,
		},
		"storeheal.ErrClosed": {
			provoke: func(t *testing.T) error {
				h := healed(t, nil)
				require.NoError(t, h.Close())
				return storeheal.Outbox(h, func(outbox.Store) outbox.Store { return outboxmem.New() }).WithVessel(context.Background(), vesselID, func(outbox.Tx) error { return nil })
			},
			is: is(storeheal.ErrClosed), class: sourcecatalog.ErrStoreUnavailable,
		},
		"outbox/outboxtest.ErrInjected": {
			provoke: func(t *testing.T) error {
				store := outboxtest.NewFaultStore(outboxmem.New())
				store.Inject(outboxtest.FailOp, 1)
				_, err := outbox.NewWriter(store).Commit(context.Background(), cycle(t))
				return err
			},
			is: is(outboxtest.ErrInjected), class: sourcecatalog.ErrStoreUnavailable,
		},

		// Package httpbinding.
		// Package signalk: a scan that cannot be trusted.
		"signalk.ScanError": {
			provoke: func(*testing.T) error {
				_, err := signalk.Map([]byte(`{"self":"vessels.a","vessels":{}}`), signalk.SelectLowestRef)
				return err
			},
			is: isType[*signalk.ScanError], class: sourcecatalog.ErrIncompleteScan,
		},

		"httpbinding.ErrNoCredentials": {
			provoke: func(*testing.T) error {
				_, err := httpbinding.MutualTLS{}.Authenticate(httptest.NewRequest(http.MethodPost, "https://receiver/", nil))
				return err
			},
			is: is(httpbinding.ErrNoCredentials), class: sourcecatalog.ErrInvalidValue,
		},
		"httpbinding.ErrBadCredentials": {
			provoke: func(t *testing.T) error {
				tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash("token", uuid.New())))
				require.NoError(t, err)
				r := httptest.NewRequest(http.MethodPost, "https://receiver/", nil)
				r.TLS = &tls.ConnectionState{}
				r.Header.Set("Authorization", "Bearer another")
				_, err = tokens.Authenticate(r)
				return err
			},
			is: is(httpbinding.ErrBadCredentials), class: sourcecatalog.ErrInvalidValue,
		},
		"httpbinding.ErrUnauthorized": {
			provoke: func(t *testing.T) error { return send401(t) },
			is:      is(httpbinding.ErrUnauthorized), class: sourcecatalog.ErrStoreUnavailable,
		},
		"httpbinding.TLSError": {
			provoke: func(t *testing.T) error {
				ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
				defer ts.Close()
				c, err := httpbinding.NewClient(ts.URL) // the system's roots do not hold the test server's
				require.NoError(t, err)
				defer c.CloseIdleConnections()
				_, err = c.Send(context.Background(), outbox.Entry{EntityType: sourcecatalog.ManifestEntityType, EntityKey: "k", Payload: []byte("{}")})
				return err
			},
			is: isType[*httpbinding.TLSError], class: sourcecatalog.ErrInvalidValue,
		},
		"httpbinding.ErrNoDeclaration": {
			provoke: func(t *testing.T) error { return declare(t, http.StatusMethodNotAllowed, "") },
			is:      is(httpbinding.ErrNoDeclaration), class: sourcecatalog.ErrUnsupported,
		},
		"httpbinding.DeclarationError": {
			provoke: func(t *testing.T) error {
				return declare(t, http.StatusOK, `{"capabilities":["b","a"],"protocols":["yachtmemory.source-catalog.v2"]}`)
			},
			is: isType[*httpbinding.DeclarationError], class: sourcecatalog.ErrUnsupported,
		},

		// Package finalize.
		"finalize.ErrActiveSnapshot": {
			provoke: func(t *testing.T) error {
				r, snapshot := activated(t)
				return r.Discard(context.Background(), vesselID, snapshot)
			},
			is: is(finalize.ErrActiveSnapshot), class: sourcecatalog.ErrConflict,
		},
		"finalize/finalizetest.ErrInjected": {
			provoke: func(t *testing.T) error {
				store := finalizetest.NewFaultStore(memstore.New())
				store.Inject(finalizetest.FailOp, 1)
				snap := build(t)
				_, err := finalize.NewReceiver(store).ReceiveManifest(context.Background(), origin, snap.Manifest.Canonical())
				return err
			},
			is: is(finalizetest.ErrInjected), class: sourcecatalog.ErrStoreUnavailable,
		},

		// Package sqlitestore: what a file and a handle can provoke here;
		// ErrPoisoned, ErrDiskFull and ErrDamaged need an injected fault,
		// which sqlitestore's own tests give (TestBatchIOErrorFailsEveryCaller,
		// TestDiskFull, TestDamagedChunk); here their values are checked.
		"sqlitestore.ErrInvalidFile": {
			provoke: func(t *testing.T) error {
				path := filepath.Join(t.TempDir(), "not.db")
				require.NoError(t, os.WriteFile(path, []byte("not a database, and long enough to have a header"), 0o600))
				_, err := sqlitestore.Open(context.Background(), path)
				return err
			},
			is: is(sqlitestore.ErrInvalidFile), class: sourcecatalog.ErrStoreUnavailable,
		},
		"sqlitestore.ErrLocked": {
			provoke: func(t *testing.T) error {
				path := filepath.Join(t.TempDir(), "held.db")
				s, err := sqlitestore.Open(context.Background(), path, sqlitestore.WithExclusiveLock())
				require.NoError(t, err)
				defer s.Close()
				_, err = sqlitestore.Open(context.Background(), path)
				return err
			},
			is: is(sqlitestore.ErrLocked), class: sourcecatalog.ErrStoreUnavailable,
		},
		"sqlitestore.ErrClosed": {
			provoke: func(t *testing.T) error {
				s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "closed.db"))
				require.NoError(t, err)
				require.NoError(t, s.Close())
				return s.Ping(context.Background())
			},
			is: is(sqlitestore.ErrClosed), class: sourcecatalog.ErrStoreUnavailable,
		},
		"sqlitestore.ErrFileChanged": {
			provoke: removedUnderStore,
			is:      is(sqlitestore.ErrFileChanged), class: sourcecatalog.ErrStoreUnavailable,
		},
		"storeheal.ErrReplaced": {
			provoke: removedUnderStore,
			is:      is(storeheal.ErrReplaced), class: sourcecatalog.ErrStoreUnavailable,
		},
		"sqlitestore.ErrPoisoned": value(sqlitestore.ErrPoisoned, sourcecatalog.ErrStoreUnavailable),
		"sqlitestore.ErrDiskFull": value(sqlitestore.ErrDiskFull, sourcecatalog.ErrStoreUnavailable),
		"sqlitestore.ErrDamaged":  value(sqlitestore.ErrDamaged, sourcecatalog.ErrStoreUnavailable),
		// A WAL file on a network file system: provoked through a fake
		// statfs by sqlitestore's TestOpenRefusesNetworkFS.
		"sqlitestore.ErrNetworkFileSystem": value(sqlitestore.ErrNetworkFileSystem, sourcecatalog.ErrStoreUnavailable),

		// Package mysqlstore: these need a server to provoke, which
		// mysqlstore's own tests do (TestMigrateRefusesNoSchema,
		// TestMigrateRefusesProductionSchema, TestMigrateIdempotentAndChecked,
		// TestLostTransactionCommitsNothing); here the values are checked.
		"mysqlstore.ErrNoSchema":         value(mysqlstore.ErrNoSchema, sourcecatalog.ErrInvalidValue),
		"mysqlstore.ErrProductionSchema": value(mysqlstore.ErrProductionSchema, sourcecatalog.ErrInvalidValue),
		"mysqlstore.ErrTransactionLost":  value(mysqlstore.ErrTransactionLost, sourcecatalog.ErrStoreUnavailable),
		"mysqlstore.SchemaError": {
			provoke: func(*testing.T) error {
				return &mysqlstore.SchemaError{Schema: "s", Missing: []string{"signalk_catalog_vessels_v2"}}
			},
			is: isType[*mysqlstore.SchemaError], class: sourcecatalog.ErrInvalidValue,
		},
	}
	for name, class := range map[string]error{
		"ErrMalformedJSON": sourcecatalog.ErrMalformedJSON, "ErrUnknownField": sourcecatalog.ErrUnknownField,
		"ErrMissingField": sourcecatalog.ErrMissingField, "ErrInvalidValue": sourcecatalog.ErrInvalidValue,
		"ErrLimitExceeded": sourcecatalog.ErrLimitExceeded, "ErrRecordTooLarge": sourcecatalog.ErrRecordTooLarge,
		"ErrHashMismatch": sourcecatalog.ErrHashMismatch, "ErrIntegrity": sourcecatalog.ErrIntegrity,
		"ErrUnsupported": sourcecatalog.ErrUnsupported, "ErrIncompleteScan": sourcecatalog.ErrIncompleteScan,
		"ErrForeignVessel": sourcecatalog.ErrForeignVessel, "ErrUnregisteredVessel": sourcecatalog.ErrUnregisteredVessel,
		"ErrConflict": sourcecatalog.ErrConflict, "ErrRevisionConflict": sourcecatalog.ErrRevisionConflict,
		"ErrStagingExhausted": sourcecatalog.ErrStagingExhausted, "ErrStoreUnavailable": sourcecatalog.ErrStoreUnavailable,
		"ErrReferenceUnavailable": sourcecatalog.ErrReferenceUnavailable,
	} {
		cases["sourcecatalog."+name] = value(class, class)
	}
	return cases
}

// operationCases are errors of operations that no exported name stands for:
// a failing store, a done context.
func operationCases() map[string]errCase {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	return map[string]errCase{
		"mysqlstore: WithVessel over a refused connection": {
			provoke: func(t *testing.T) error {
				return mysqlstore.New(refused(t)).WithVessel(context.Background(), vesselID, func(finalize.Tx) error { return nil })
			},
			is: hasCause, class: sourcecatalog.ErrStoreUnavailable,
		},
		"mysqlstore: Migrate over a refused connection": {
			provoke: func(t *testing.T) error { return mysqlstore.Migrate(context.Background(), refused(t)) },
			is:      hasCause, class: sourcecatalog.ErrStoreUnavailable,
		},
		"agent: NewSender with a token file that cannot be read": {
			provoke: func(t *testing.T) error {
				_, err := agent.NewSender(agent.Config{Vessel: vesselID, Store: outboxmem.New(), URL: "https://127.0.0.1/", TokenFile: filepath.Join(t.TempDir(), "absent")})
				return err
			},
			is: hasCause, class: sourcecatalog.ErrInvalidValue,
		},
		"agent: NewSender without a URL": {
			provoke: func(t *testing.T) error {
				_, err := agent.NewSender(agent.Config{Vessel: vesselID, Store: outboxmem.New()})
				return err
			},
			is: isType[*sourcecatalog.Error], class: sourcecatalog.ErrInvalidValue,
		},
		"httpbinding: NewClient with a caller's client over http elsewhere": {
			provoke: func(t *testing.T) error {
				_, err := httpbinding.NewClient("http://192.0.2.1/", httpbinding.WithHTTPClient(&http.Client{}))
				return err
			},
			is: isType[*sourcecatalog.Error], class: sourcecatalog.ErrInvalidValue,
		},
		"outbox: Publish with a done context": {
			provoke: func(t *testing.T) error {
				_, err := outbox.NewPublisher(outboxmem.New(), vesselID, wrongReceipts{}, outbox.WithReceiverV2(true)).Publish(done)
				return err
			},
			is: is(context.Canceled), class: sourcecatalog.ErrStoreUnavailable,
		},
		"outbox: Commit with a done context": {
			provoke: func(t *testing.T) error {
				_, err := outbox.NewWriter(outboxmem.New()).Commit(done, cycle(t))
				return err
			},
			is: is(context.Canceled), class: sourcecatalog.ErrStoreUnavailable,
		},
		"outbox: Publish over a store failing to mark delivered": {
			provoke: func(t *testing.T) error {
				store := outboxtest.NewFaultStore(committed(t, outboxmem.New()))
				store.Inject(outboxtest.FailOp, 2) // Pending, then SetState
				_, err := outbox.NewPublisher(store, vesselID, rightReceipts{}, outbox.WithReceiverV2(true)).Publish(context.Background())
				return err
			},
			is: is(outboxtest.ErrInjected), class: sourcecatalog.ErrStoreUnavailable,
		},
	}
}

// knownGaps are cases that still break the contract, with the work that
// fixes them. A gap that is fixed fails the test until it is removed here.
var knownGaps = map[string]string{}

func TestErrorContract(t *testing.T) {
	cases := errorCases()
	for _, m := range []map[string]errCase{cases, operationCases()} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			c := m[name]
			t.Run(name, func(t *testing.T) {
				problem := violation(c, c.provoke(t))
				gap, known := knownGaps[name]
				switch {
				case known && problem != "":
					t.Skipf("known gap: %s: %s", gap, problem)
				case known:
					t.Errorf("the contract holds now: remove %q from knownGaps", name)
				case problem != "":
					t.Error(problem)
				}
			})
		}
	}
	for name := range knownGaps {
		require.Contains(t, cases, name, "knownGaps names no case")
	}
}

// violation says how err breaks c, or returns "".
func violation(c errCase, err error) string {
	if err == nil {
		return "provoked no error"
	}
	if !c.is(err) {
		return fmt.Sprintf("provoked another error than the one named: %v", err)
	}
	var got []error
	for _, class := range sourcecatalog.Classes() {
		if errors.Is(err, class) {
			got = append(got, class)
		}
	}
	want := []error{c.class}
	if c.class == nil {
		want = nil
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("%q wraps the classes %q, want %q", err, got, want)
	}
	return ""
}

// TestErrorContractCoversAll: every exported error of the module's
// packages — a package-level variable named Err… or a type named …Error —
// has a case in errorCases, and every case names one. Errors of internal
// packages are causes that no caller sees alone: the exported package that
// returns one classes it, and its own tests check that (for example
// mysqlstore's TestErrorsAreClassed for internal/indexblob.ErrCorrupt).
func TestErrorContractCoversAll(t *testing.T) {
	declared := exportedErrors(t)
	require.Contains(t, declared, "outbox.ErrCapabilityOff", "the parser found the declarations")
	cases := errorCases()
	for _, name := range declared {
		if _, ok := cases[name]; !ok {
			t.Errorf("%s has no case in errorCases: provoke it there and give its class", name)
		}
	}
	for name := range cases {
		if !slices.Contains(declared, name) {
			t.Errorf("errorCases has %s, which no package declares", name)
		}
	}
}

// exportedErrors parses every package of the module (not commands, internal
// packages, nested modules or tests) and returns its exported error names.
func exportedErrors(t *testing.T) []string {
	var names []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			skip := d.Name() == "testdata" || d.Name() == "internal" || strings.HasPrefix(d.Name(), ".") || exists(filepath.Join(path, "go.mod"))
			if path != "." && skip {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = "sourcecatalog"
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if g.Tok == token.VAR && id.IsExported() && strings.HasPrefix(id.Name, "Err") {
							names = append(names, pkg+"."+id.Name)
						}
					}
				case *ast.TypeSpec:
					if s.Name.IsExported() && strings.HasSuffix(s.Name.Name, "Error") {
						names = append(names, pkg+"."+s.Name.Name)
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return names
}

// send401 returns the error of a Client's Send answered 401.
func send401(t *testing.T) error {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	c, err := httpbinding.NewClient(ts.URL, httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(pool, nil)))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	_, err = c.Send(context.Background(), outbox.Entry{EntityType: sourcecatalog.ManifestEntityType, EntityKey: "k", Payload: []byte("{}")})
	return err
}

// declare reads the declaration of a receiver answering a GET with
// status and, when not empty, the JSON text body.
func declare(t *testing.T, status int, body string) error {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	c, err := httpbinding.NewClient(ts.URL, httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(pool, nil)))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	_, err = c.Declaration(context.Background())
	return err
}

// refused returns a pool whose connections are refused: nothing listens
// on port 1.
func refused(t *testing.T) *sql.DB {
	db, err := sql.Open("mysql", "nobody@tcp(127.0.0.1:1)/none?timeout=2s")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// hasCause reports whether err is an *sourcecatalog.Error with a cause,
// such as the driver's error.
func hasCause(err error) bool { var e *sourcecatalog.Error; return errors.As(err, &e) && e.Err != nil }

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func isType[T error](err error) bool { var e T; return errors.As(err, &e) }

// value is a case for an error checked as a value.
func value(err, class error) errCase {
	return errCase{provoke: func(*testing.T) error { return err }, is: is(err), class: class}
}

func parse(src string) func(*testing.T) error {
	return func(*testing.T) error { _, err := canonical.Parse([]byte(src)); return err }
}

var (
	vesselID = uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	origin   = finalize.Origin{VesselID: vesselID}
	cycleAt  = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

func records(t *testing.T) []*catalog.Record {
	t.Helper()
	p, err := catalog.NewPath(catalog.Path{Path: "navigation.speedOverGround", Unit: catalog.UnitOf("m/s")})
	require.NoError(t, err)
	s, err := catalog.NewSource(catalog.Source{SourceRef: "gps"})
	require.NoError(t, err)
	o, err := catalog.NewObservation(catalog.Observation{Path: "navigation.speedOverGround", SourceRef: "gps", ValueType: catalog.Number})
	require.NoError(t, err)
	return []*catalog.Record{p, s, o}
}

// healed returns a storeheal.Handle whose first call fails with poison,
// when it is not nil, poisoning the handle, and whose reopen never
// succeeds.
func healed(t *testing.T, poison error) *storeheal.Handle[outbox.Store] {
	opened := false
	open := func(context.Context) (outbox.Store, io.Closer, error) {
		if opened {
			return nil, nil, errors.New("the store is gone")
		}
		opened = true
		return outboxmem.New(), nil, nil
	}
	h, err := storeheal.Open(context.Background(), open, func(err error) bool { return err == poison })
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	if poison != nil {
		err := h.Do(func(outbox.Store) error { return poison })
		require.Equal(t, poison, err)
	}
	return h
}

// healedStore is the finalize.Store of a healed Handle's outbox: never
// called, since the Handle refuses every call.
func healedStore(outbox.Store) finalize.Store { return memstore.New() }

func cycle(t *testing.T) outbox.Cycle { return outbox.NewCycle(vesselID, cycleAt, records(t)) }

// committed commits one cycle into store and returns it.
func committed[S outbox.Store](t *testing.T, store S) S {
	t.Helper()
	_, err := outbox.NewWriter(store).Commit(context.Background(), cycle(t))
	require.NoError(t, err)
	return store
}

func build(t *testing.T) *envelope.Snapshot {
	t.Helper()
	snap, err := envelope.Build(envelope.Input{VesselID: vesselID, SnapshotID: uuid.New(), Revision: 1, DiscoveredAt: cycleAt, Records: records(t)})
	require.NoError(t, err)
	return snap
}

// activated returns a receiver over a memstore with one snapshot active.
func activated(t *testing.T) (*finalize.Receiver, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	r, snap := finalize.NewReceiver(memstore.New()), build(t)
	for _, c := range snap.Chunks {
		_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
		require.NoError(t, err)
	}
	_, err := r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical())
	require.NoError(t, err)
	out, err := r.Finalize(ctx, vesselID, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	return r, snap.Manifest.SnapshotID
}

// wrongReceipts acknowledges something other than what was sent.
type wrongReceipts struct{}

func (wrongReceipts) Send(context.Context, outbox.Entry) (envelope.Receipt, error) {
	return envelope.Receipt{}, nil
}

// rightReceipts acknowledges what was sent.
type rightReceipts struct{}

func (rightReceipts) Send(_ context.Context, e outbox.Entry) (envelope.Receipt, error) {
	return e.Receipt(), nil
}

// removedUnderStore is the error of a Store whose file was removed under
// it, as its Ping finds it.
func removedUnderStore(t *testing.T) error {
	path := filepath.Join(t.TempDir(), "removed.db")
	s, err := sqlitestore.Open(context.Background(), path)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, os.Remove(path))
	return s.Ping(context.Background())
}
