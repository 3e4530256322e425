package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/fakeclock"
)

func TestDiscoverSettled(t *testing.T) {
	incomplete := sourcecatalog.Errorf(sourcecatalog.ErrIncompleteScan, "a body cut short")
	for _, tc := range []struct {
		name    string
		answers []error // per scan; nil answers the boat
		tries   int
		calls   []time.Duration // when the scans come
		err     error
	}{
		{"settled", []error{nil}, 3, []time.Duration{0}, nil},
		{"waits the settle time", []error{notSettled{2 * time.Minute}, nil}, 3, []time.Duration{0, 2 * time.Minute}, nil},
		{"and a restart", []error{notSettled{2 * time.Minute}, notSettled{time.Minute}, nil}, 3, []time.Duration{0, 2 * time.Minute, 3 * time.Minute}, nil},
		{"gives up after tries", []error{notSettled{time.Minute}, notSettled{time.Minute}, nil}, 2, []time.Duration{0, time.Minute}, sourcecatalog.ErrIncompleteScan},
		{"at least once", []error{notSettled{time.Minute}, nil}, 0, []time.Duration{0}, sourcecatalog.ErrIncompleteScan},
		{"no retry without RetryAfter", []error{incomplete, nil}, 3, []time.Duration{0}, sourcecatalog.ErrIncompleteScan},
		{"nor with a RetryAfter of 0", []error{notSettled{0}, nil}, 3, []time.Duration{0}, sourcecatalog.ErrIncompleteScan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New(start)
			d := &script{clock: clock, answer: func(n int) ([]*catalog.Record, error) {
				if err := tc.answers[n]; err != nil {
					return nil, err
				}
				return examples.Boat(), nil
			}}
			var waits []time.Duration
			records, err := agent.DiscoverSettled(context.Background(), d, agent.SettleOptions{Clock: clock, Tries: tc.tries,
				OnWait: func(w time.Duration, err error) {
					assert.Error(t, err)
					waits = append(waits, w)
				}})
			assert.Equal(t, tc.calls, d.times())
			assert.Equal(t, clock.Sleeps(), waits, "each wait told before it is slept")
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Nil(t, records)
				return
			}
			require.NoError(t, err)
			assert.Len(t, records, len(examples.Boat()))
		})
	}

	t.Run("cancelled during a wait", func(t *testing.T) {
		clock := fakeclock.New(start)
		ctx, cancel := context.WithCancel(context.Background())
		clock.At(start.Add(time.Second), cancel)
		d := &script{clock: clock, answer: func(int) ([]*catalog.Record, error) { return nil, notSettled{time.Minute} }}
		_, err := agent.DiscoverSettled(ctx, d, agent.SettleOptions{Clock: clock, Tries: 3})
		require.ErrorIs(t, err, sourcecatalog.ErrIncompleteScan)
		assert.Equal(t, []time.Duration{0}, d.times())
	})
}
