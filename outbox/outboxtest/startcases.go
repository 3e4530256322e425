package outboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// NewStartMemory returns a fresh, empty StartMemory; RunStartMemory calls
// it once per subtest.
type NewStartMemory = func(t *testing.T) outbox.StartMemory

// RunStartMemory runs the conformance suite of outbox.StartMemory (SPEC.md
// §12.7) against the memories newMemory makes: a start is remembered with
// the time it was first seen, which later calls keep; it settles once; the
// oldest start goes beyond outbox.MaxServerStarts; a start out of range
// changes nothing.
func RunStartMemory(t *testing.T, newMemory NewStartMemory) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 1, 6, 0, 0, 123_000_000, time.UTC)
	ms := func(d time.Duration) time.Time { return t0.Add(d) }

	t.Run("FirstSeenKept", func(t *testing.T) {
		m := newMemory(t)
		got, err := m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: t0.Add(456 * time.Microsecond)})
		require.NoError(t, err)
		assert.Equal(t, outbox.ServerStart{ID: "a", FirstSeen: t0}, norm(got), "added, to the millisecond")
		got, err = m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: ms(time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, outbox.ServerStart{ID: "a", FirstSeen: t0}, norm(got), "a later sight keeps the first")
	})

	t.Run("SettlesOnce", func(t *testing.T) {
		m := newMemory(t)
		_, err := m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: t0})
		require.NoError(t, err)
		got, err := m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: ms(time.Minute), Settled: ms(time.Minute)})
		require.NoError(t, err)
		assert.Equal(t, outbox.ServerStart{ID: "a", FirstSeen: t0, Settled: ms(time.Minute)}, norm(got))
		got, err = m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: ms(time.Hour), Settled: ms(time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, ms(time.Minute), norm(got).Settled, "the first settle is kept")
		got, err = m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: ms(2 * time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, ms(time.Minute), norm(got).Settled, "a sight without a settle unsettles nothing")
		other, err := m.RememberStart(ctx, outbox.ServerStart{ID: "b", FirstSeen: ms(time.Hour)})
		require.NoError(t, err)
		assert.True(t, other.Settled.IsZero(), "starts are apart")
	})

	t.Run("Others", func(t *testing.T) {
		m := newMemory(t)
		got, err := m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: t0, Others: 7})
		require.NoError(t, err)
		assert.Zero(t, got.Others, "the first start met: no other, whatever the caller passed")
		got, err = m.RememberStart(ctx, outbox.ServerStart{ID: "b", FirstSeen: ms(time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, 1, got.Others, "a start after another is a restart")
		got, err = m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: ms(2 * time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, 1, got.Others)
	})

	t.Run("Bounded", func(t *testing.T) {
		m := newMemory(t)
		for i := range outbox.MaxServerStarts + 1 {
			// Seen in an order other than the ids' and the calls'.
			at := ms(time.Duration((i*7)%(outbox.MaxServerStarts+1)) * time.Second)
			_, err := m.RememberStart(ctx, outbox.ServerStart{ID: fmt.Sprint("start-", i), FirstSeen: at})
			require.NoError(t, err)
		}
		// start-0 was first seen earliest (0 s): it was dropped, so it is
		// new again; every other start kept its first sight.
		for i := range outbox.MaxServerStarts + 1 {
			if i == 0 {
				continue
			}
			got, err := m.RememberStart(ctx, outbox.ServerStart{ID: fmt.Sprint("start-", i), FirstSeen: ms(time.Hour)})
			require.NoError(t, err)
			want := ms(time.Duration((i*7)%(outbox.MaxServerStarts+1)) * time.Second)
			require.Equal(t, want, norm(got).FirstSeen, "start-%d kept", i)
		}
		got, err := m.RememberStart(ctx, outbox.ServerStart{ID: "start-0", FirstSeen: ms(2 * time.Hour)})
		require.NoError(t, err)
		assert.Equal(t, ms(2*time.Hour), norm(got).FirstSeen, "the start first seen earliest was dropped")
	})

	t.Run("Refused", func(t *testing.T) {
		m := newMemory(t)
		for name, s := range map[string]outbox.ServerStart{
			"empty id":      {FirstSeen: t0},
			"long id":       {ID: strings.Repeat("x", outbox.MaxStartIDBytes+1), FirstSeen: t0},
			"not UTF-8":     {ID: "\xff", FirstSeen: t0},
			"no first seen": {ID: "a"},
		} {
			_, err := m.RememberStart(ctx, s)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, name)
		}
		got, err := m.RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: ms(time.Minute)})
		require.NoError(t, err)
		assert.Equal(t, ms(time.Minute), norm(got).FirstSeen, "nothing was remembered of a refused start")
		_, err = m.RememberStart(ctx, outbox.ServerStart{ID: strings.Repeat("x", outbox.MaxStartIDBytes), FirstSeen: t0})
		require.NoError(t, err, "an id of the bound")
	})
}

// norm puts a start's times in UTC for comparison.
func norm(s outbox.ServerStart) outbox.ServerStart {
	if !s.FirstSeen.IsZero() {
		s.FirstSeen = s.FirstSeen.UTC()
	}
	if !s.Settled.IsZero() {
		s.Settled = s.Settled.UTC()
	}
	return s
}
