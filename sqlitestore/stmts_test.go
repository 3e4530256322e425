package sqlitestore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestHotStatementsStay: multi-row INSERTs of every size from 1 to 300
// rows, each a text of its own, never push out a statement prepared
// before them: every fixed statement is the same prepared statement
// afterwards, the sized ones stay within their bound, and no text built
// for a number of rows is kept among the fixed ones.
func TestHotStatementsStay(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := context.Background()
	vessel := uuid.New()
	require.NoError(t, setVessel(ctx, s, vessel))
	hot, _ := s.Stmts()
	require.NotEmpty(t, hot)

	seen := finalize.Seen{Revision: 1, At: time.Unix(1, 0)}
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		for n := 1; n <= 300; n++ {
			items := make([]finalize.Item, n)
			for i := range items {
				items[i] = finalize.Item{Key: catalog.Key{Kind: catalog.KindPath, Path: fmt.Sprintf("p%d.%d", n, i)},
					Record: []byte(`{}`), FirstSeen: seen, LastSeen: seen, CurrentlyObserved: true}
			}
			if err := tx.PutItems(ctx, items); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, setVessel(ctx, s, vessel))

	fixed, sized := s.Stmts()
	for q, st := range hot {
		require.Same(t, st, fixed[q], "a hot statement was evicted and prepared again: %s", q)
	}
	require.LessOrEqual(t, len(sized), sqlitestore.MaxSizedStmts)
	require.NotEmpty(t, sized)
	require.Less(t, len(fixed), 40, "texts built for a number of rows are kept among the fixed statements")
}
