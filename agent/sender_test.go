package agent_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// A Config whose zero or contradictory members would be unsafe fails
// NewSender (and New) with invalid_value located at the field at fault.
func TestNewSenderRefuses(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("tok\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	bom := filepath.Join(dir, "bom")
	require.NoError(t, os.WriteFile(bom, []byte("\ufefftok\n"), 0o600))
	good := func() agent.Config {
		return agent.Config{Vessel: vessel, Store: outboxmem.New(), URL: "https://shore.example/v2/messages", TokenFile: tokenFile}
	}
	cases := []struct {
		name  string
		edit  func(*agent.Config)
		field string
	}{
		{"no vessel", func(c *agent.Config) { c.Vessel = [16]byte{} }, "Vessel"},
		{"no store", func(c *agent.Config) { c.Store = nil }, "Store"},
		{"no URL", func(c *agent.Config) { c.URL = "" }, "URL"},
		{"http elsewhere", func(c *agent.Config) { c.URL, c.TokenFile = "http://192.0.2.1/", "" }, "URL"},
		{"token and certificate", func(c *agent.Config) { c.CertFile, c.KeyFile = "c.pem", "k.pem" }, "TokenFile"},
		{"certificate without key", func(c *agent.Config) { c.TokenFile, c.CertFile = "", "c.pem" }, "KeyFile"},
		{"key without certificate", func(c *agent.Config) { c.TokenFile, c.KeyFile = "", "k.pem" }, "CertFile"},
		{"HTTP client and CA", func(c *agent.Config) { c.HTTPClient, c.CAFile = &http.Client{}, "ca.pem" }, "HTTPClient"},
		{"URL and transport", func(c *agent.Config) { c.Transport = echo{} }, "Transport"},
		{"transport with credentials", func(c *agent.Config) { c.URL, c.Transport = "", echo{} }, "Transport"},
		{"auto gate over another transport", func(c *agent.Config) { c.URL, c.TokenFile, c.Transport = "", "", echo{} }, "Gate"},
		{"unknown gate", func(c *agent.Config) { c.Gate = 7 }, "Gate"},
		{"negative timeout", func(c *agent.Config) { c.Timeout = -1 }, "Timeout"},
		{"unreadable token file", func(c *agent.Config) { c.TokenFile = filepath.Join(dir, "absent") }, "TokenFile"},
		{"empty token file", func(c *agent.Config) { c.TokenFile = empty }, "TokenFile"},
		{"a token NewClient refuses", func(c *agent.Config) { c.TokenFile = bom }, "TokenFile"},
		{"a bad URL with a good token", func(c *agent.Config) { c.URL = "ftp://shore.example/" }, "URL"},
		{"CA file not PEM", func(c *agent.Config) { c.CAFile = tokenFile }, "CAFile"},
	}
	_, err := agent.NewSender(good())
	require.NoError(t, err, "the base case is valid")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.edit(&cfg)
			s, err := agent.NewSender(cfg)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			assert.Nil(t, s)
			var se *sourcecatalog.Error
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Equal(t, tc.field, se.Field, "%v", err)
			cfg.Discoverer, cfg.Interval = script1{}, 0
			_, err = agent.New(cfg)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, "New refuses what NewSender does")
		})
	}
	t.Run("agent without discoverer", func(t *testing.T) {
		_, err := agent.New(good())
		var se *sourcecatalog.Error
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "Discoverer", se.Field)
	})
}

// echo is a Transport that acknowledges every entry, and calls onSend
// first when set.
type echo struct{ onSend func() }

func (e echo) Send(_ context.Context, en outbox.Entry) (envelope.Receipt, error) {
	if e.onSend != nil {
		e.onSend()
	}
	return en.Receipt(), nil
}

// countedEcho is an echo that counts each request as 1 byte sent, 2
// uncompressed.
type countedEcho struct{ echo }

func (c countedEcho) SendCounted(ctx context.Context, e outbox.Entry) (envelope.Receipt, outbox.RequestBytes, error) {
	rc, err := c.Send(ctx, e)
	return rc, outbox.RequestBytes{Sent: 1, Uncompressed: 2}, err
}

// script1 is a Discoverer for New's checks; it is never run.
type script1 struct{}

func (script1) Discover(context.Context) ([]*catalog.Record, error) { return nil, nil }

// Entries committed during a Publish — here, after the drain's last pass,
// where Drain alone would end — are published by the same call: nothing
// is left pending.
func TestSenderPublishesWhatIsCommittedMeanwhile(t *testing.T) {
	ctx := context.Background()
	store := outboxmem.New()
	s, err := agent.NewSender(agent.Config{Vessel: vessel, Store: store, Transport: countedEcho{}, Gate: agent.GateOn})
	require.NoError(t, err)
	first, err := s.Commit(ctx, examples.Boat())
	require.NoError(t, err)
	var second outbox.Commit
	rep, err := s.Publish(ctx, outbox.DrainOptions{OnPass: func(p outbox.DrainPass) {
		if p.Pass.Sent == 0 && second.Revision == 0 { // the drain's last pass
			second, err = s.Commit(ctx, examples.Scaled(300))
			require.NoError(t, err)
		}
	}})
	require.NoError(t, err)
	assert.Equal(t, outbox.Drained, rep.Outcome)
	assert.Zero(t, rep.Pending)
	assert.Equal(t, len(first.Entries)+len(second.Entries), rep.Delivered)
	assert.Equal(t, 4, rep.Passes, "two drains of two passes each")
	n := int64(rep.Delivered)
	assert.Equal(t, outbox.RequestBytes{Sent: n, Uncompressed: 2 * n}, rep.Bytes, "summed over both drains")
}

// Publish reports success only when nothing is left pending: a cycle
// committed after the last pass, as the drain's time runs out, makes it
// give up with the count.
func TestSenderPublishPendingAtTheEndFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := outboxmem.New()
	s, err := agent.NewSender(agent.Config{Vessel: vessel, Store: store, Transport: echo{}, Gate: agent.GateOn})
	require.NoError(t, err)
	_, err = s.Commit(ctx, examples.Boat())
	require.NoError(t, err)
	var late outbox.Commit
	rep, err := s.Publish(ctx, outbox.DrainOptions{OnPass: func(p outbox.DrainPass) {
		if p.Pass.Sent == 0 {
			late, err = s.Commit(context.Background(), examples.Scaled(300))
			require.NoError(t, err)
			cancel() // the drain's time is up
		}
	}})
	require.Error(t, err)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorIs(t, err, context.Canceled, "the cause is the context's, as Drain's")
	assert.Equal(t, outbox.DrainGaveUp, rep.Outcome)
	assert.Equal(t, len(late.Entries), rep.Pending)
}

// Config.Build reaches the snapshots a Sender commits: each chunk entry
// is the chunk envelope.Build makes of the same records with the same
// options — the greedy cut with none, the content-defined one (SPEC.md
// §7.2) with envelope.WithContentDefinedCuts.
func TestSenderBuildOptions(t *testing.T) {
	ctx := context.Background()
	recs := examples.Scaled(1500)
	chunks := map[string]int{}
	for _, tc := range []struct {
		name  string
		build []envelope.Option
	}{{"greedy", nil}, {"content-defined", []envelope.Option{envelope.WithContentDefinedCuts()}}} {
		s, err := agent.NewSender(agent.Config{Vessel: vessel, Store: outboxmem.New(), Transport: echo{}, Gate: agent.GateOff, Build: tc.build})
		require.NoError(t, err)
		com, err := s.Commit(ctx, recs)
		require.NoError(t, err)
		m, err := envelope.DecodeManifest(com.Entries[0].Payload)
		require.NoError(t, err)
		want, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: m.SnapshotID, Revision: m.Revision, DiscoveredAt: m.DiscoveredAt, Records: recs}, tc.build...)
		require.NoError(t, err)
		require.Len(t, com.Entries, 1+len(want.Chunks), tc.name)
		for i, c := range want.Chunks {
			assert.Equal(t, c.Canonical(), com.Entries[1+i].Payload, "%s: chunk %d", tc.name, i)
		}
		chunks[tc.name] = len(want.Chunks)
	}
	assert.NotEqual(t, chunks["greedy"], chunks["content-defined"], "the two rules cut these records apart")
}
