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
	require.Len(t, classes, 16)
	assert.Equal(t, sourcecatalog.ErrMalformedJSON, classes[0], "in the order declared")
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, classes[15], "in the order declared")
	for i, c := range classes {
		assert.Equal(t, c, sourcecatalog.Class(c), "class %d is its own class", i)
		for _, d := range classes[i+1:] {
			assert.NotErrorIs(t, c, d, "classes are distinct")
		}
	}
	classes[0] = nil
	assert.Equal(t, sourcecatalog.ErrMalformedJSON, sourcecatalog.Classes()[0], "each call returns a new slice")
}
