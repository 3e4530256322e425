package agent

import (
	"context"
	"errors"
	"time"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// DiscoverSettled runs one scan for a one-shot controller (a discover
// command piped into commit): it calls d.Discover, and after an error
// whose RetryAfter() is positive — a Signal K server that has not settled
// since this process first saw its start, or that restarted during the
// scan — waits that long on clock and scans again, tries times in all
// (at least once). It returns the first records, or the last error as it
// is; the error of a scan that says nothing of retrying, at once. A ctx
// that ends during a wait returns that scan's error. onWait, when set, is
// told of each wait before it begins.
func DiscoverSettled(ctx context.Context, d Discoverer, clock outbox.Clock, tries int, onWait func(wait time.Duration, err error)) ([]*catalog.Record, error) {
	if clock == nil {
		clock = outbox.SystemClock{}
	}
	for try := 1; ; try++ {
		records, err := d.Discover(ctx)
		wait, ok := retryAfter(err)
		if err == nil || try >= tries || !ok || wait <= 0 {
			return records, err
		}
		if onWait != nil {
			onWait(wait, err)
		}
		if !clock.Sleep(ctx, wait) {
			return nil, err
		}
	}
}

// retryAfter returns the wait an error says a scan needs before it may
// succeed — its RetryAfter() — and whether it says one.
func retryAfter(err error) (time.Duration, bool) {
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) {
		return 0, false
	}
	return ra.RetryAfter(), true
}
