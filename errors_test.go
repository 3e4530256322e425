package sourcecatalog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
)

func TestClass(t *testing.T) {
	located := sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "duplicate path").InChunk(2).AtField("path")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"nil", nil, nil},
		{"no class", errors.New("plain"), nil},
		{"a done context", context.Canceled, nil},
		{"a class", sourcecatalog.ErrConflict, sourcecatalog.ErrConflict},
		{"a located error", located, sourcecatalog.ErrIntegrity},
		{"a cause under a class", sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, context.Canceled), sourcecatalog.ErrStoreUnavailable},
		{"wrapped with fmt", fmt.Errorf("outbox: %w", located), sourcecatalog.ErrIntegrity},
		{"two classes: the first declared", errors.Join(sourcecatalog.ErrStoreUnavailable, sourcecatalog.ErrMalformedJSON), sourcecatalog.ErrMalformedJSON},
	} {
		assert.Equal(t, tc.want, sourcecatalog.Class(tc.err), tc.name)
	}
}

func TestClasses(t *testing.T) {
	classes := sourcecatalog.Classes()
	require.Len(t, classes, 17)
	assert.Equal(t, sourcecatalog.ErrMalformedJSON, classes[0], "in the order declared")
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, classes[16], "in the order declared")
	for i, c := range classes {
		assert.Equal(t, c, sourcecatalog.Class(c), "class %d is its own class", i)
		for _, d := range classes[i+1:] {
			assert.NotErrorIs(t, c, d, "classes are distinct")
		}
	}
	classes[0] = nil
	assert.Equal(t, sourcecatalog.ErrMalformedJSON, sourcecatalog.Classes()[0], "each call returns a new slice")
}

// TestWireNames pins the wire names of SPEC.md §10.1 and checks that
// WireName and ClassNamed are inverse over every class.
func TestWireNames(t *testing.T) {
	want := map[error]string{
		sourcecatalog.ErrMalformedJSON: "malformed_json", sourcecatalog.ErrUnknownField: "unknown_field",
		sourcecatalog.ErrMissingField: "missing_field", sourcecatalog.ErrInvalidValue: "invalid_value",
		sourcecatalog.ErrLimitExceeded: "limit_exceeded", sourcecatalog.ErrRecordTooLarge: "record_too_large",
		sourcecatalog.ErrHashMismatch: "hash_mismatch", sourcecatalog.ErrIntegrity: "integrity",
		sourcecatalog.ErrUnsupported: "unsupported", sourcecatalog.ErrIncompleteScan: "incomplete_scan",
		sourcecatalog.ErrForeignVessel: "foreign_vessel", sourcecatalog.ErrUnregisteredVessel: "unregistered_vessel",
		sourcecatalog.ErrConflict: "conflict", sourcecatalog.ErrRevisionConflict: "revision_conflict",
		sourcecatalog.ErrStagingExhausted: "staging_exhausted", sourcecatalog.ErrReferenceUnavailable: "reference_unavailable",
		sourcecatalog.ErrStoreUnavailable: "store_unavailable",
	}
	classes := sourcecatalog.Classes()
	if len(classes) != len(want) {
		t.Fatalf("%d classes, want %d", len(classes), len(want))
	}
	for _, c := range classes {
		name := sourcecatalog.WireName(c)
		if name != want[c] {
			t.Errorf("WireName(%v) = %q, want %q", c, name, want[c])
		}
		if got := sourcecatalog.ClassNamed(name); got != c {
			t.Errorf("ClassNamed(%q) = %v, want %v", name, got, c)
		}
	}
	if n := sourcecatalog.WireName(errors.New("other")); n != "" {
		t.Errorf("WireName of a non-class = %q, want empty", n)
	}
	if c := sourcecatalog.ClassNamed("Conflict"); c != nil {
		t.Errorf("ClassNamed is case-sensitive; got %v", c)
	}
}
