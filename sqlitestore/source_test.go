package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Source names the file, opens it, and takes ErrPoisoned alone for a
// store to reopen.
func TestSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receiver.db")
	src := sqlitestore.Source(path)
	assert.Equal(t, "sqlite "+path, src.Name)
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("commit: %w", sqlitestore.ErrPoisoned), true},
		{sqlitestore.ErrLocked, false},
		{sqlitestore.ErrClosed, false},
		{context.DeadlineExceeded, false},
	} {
		assert.Equal(t, tc.want, src.Poisoned(tc.err), "%v", tc.err)
	}
	h, err := storeheal.OpenReceiver(context.Background(), src)
	require.NoError(t, err)
	require.NoError(t, h.Close())
}
