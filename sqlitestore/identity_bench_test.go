package sqlitestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkFileIdentityCheck measures the check of the file's identity
// the Store makes after every commit and at every Ping, against the
// commit of one message's transaction (a vessel's pointer written, as
// durable as a receipt) on the same file system, measured in the same
// run: check_ns is one check, commit_ns one transaction alone, and
// check_pct_of_commit the check's share of it. Under load a batch's
// callers share one check as they share the commit.
func BenchmarkFileIdentityCheck(b *testing.B) {
	s, _ := open(b)
	ctx := context.Background()
	v := uuid.New()
	const commits = 50
	start := time.Now()
	for range commits {
		if err := setVessel(ctx, s, v); err != nil {
			b.Fatal(err)
		}
	}
	commit := time.Since(start) / commits
	b.ResetTimer()
	for b.Loop() {
		if err := s.Moved(); err != nil {
			b.Fatal(err)
		}
	}
	check := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(check.Nanoseconds()), "check_ns")
	b.ReportMetric(float64(commit.Nanoseconds()), "commit_ns")
	b.ReportMetric(100*float64(check)/float64(commit), "check_pct_of_commit")
}
