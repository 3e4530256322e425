package storeheal

import (
	"context"
	"time"
)

// WithSleep replaces the wait between reopen attempts.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) { c.sleep = f }
}

// WithClock replaces the clock of Status.Since and of the backoff's reset.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithJitter replaces the jitter of the backoff's delays.
func WithJitter(f func(time.Duration) time.Duration) Option { return func(c *config) { c.jitter = f } }
