package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/receiver"
)

// TestServeSupersededByActive: serve's metric and log line for a vessel
// whose revisions went backwards (SPEC.md §8.4) come from the Receiver's
// events: the gauge follows the count, and each superseded snapshot warns.
func TestServeSupersededByActive(t *testing.T) {
	m := newServeMetrics()
	var logs bytes.Buffer
	l := receiver.Log{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	r := finalize.NewReceiver(memstore.New(), finalize.WithObserver(func(e finalize.Event) { m.ObserveReceiver(e); l.Finalize(e) }))
	gauge := `sourcecatalog_superseded_by_active{vessel="` + vesselFlag + `"} `
	// warnings returns the superseded warnings logged since the last call.
	warnings := func() []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
			if rec["level"] == "WARN" && strings.HasPrefix(rec["msg"].(string), "snapshot superseded by the active one") {
				out = append(out, rec)
			}
		}
		logs.Reset()
		return out
	}
	ctx := context.Background()
	finalizeNew := func(rev int64) {
		t.Helper()
		s := snapshotAt(t, rev, examples.Scaled(int(rev%50)+5))
		stageAll(t, r, s)
		_, err := r.Finalize(ctx, examples.VesselID, s.Manifest.SnapshotID)
		require.NoError(t, err)
	}

	finalizeNew(40)
	assertMetric(t, scrapeMetrics(t, m), gauge+"0")
	assert.Empty(t, warnings(), "an activation warns of nothing")
	for n := 1; n <= 2; n++ {
		finalizeNew(int64(n))
		assertMetric(t, scrapeMetrics(t, m), gauge+string(rune('0'+n)))
		w := warnings()
		require.Len(t, w, 1, "one warning per superseded snapshot")
		assert.Equal(t, float64(n), w[0]["superseded_by_active"])
		assert.Equal(t, float64(n), w[0]["revision"])
		assert.Equal(t, float64(40), w[0]["active_revision"])
		assert.Equal(t, vesselFlag, w[0]["vessel"])
	}
	finalizeNew(41)
	assertMetric(t, scrapeMetrics(t, m), gauge+"0")
	assert.Empty(t, warnings())
}
