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
)

// TestPutItemsKeepsEachRowsValues: PutItems writes every item with its
// own first and last seen and currently observed, whether the items of
// an INSERT share them (an activation's, bound once a statement) or not
// (one item in a batch differs): the items read back are those put, over
// more items than one INSERT writes.
func TestPutItemsKeepsEachRowsValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	shared := finalize.Seen{Revision: 7, At: at}
	for name, odd := range map[string]func(i int, it *finalize.Item){
		"shared": func(int, *finalize.Item) {},
		"first seen differs": func(i int, it *finalize.Item) {
			if i == 300 {
				it.FirstSeen = finalize.Seen{Revision: 3, At: at.Add(-time.Hour)}
			}
		},
		"last seen differs": func(i int, it *finalize.Item) {
			if i == 5 {
				it.LastSeen = finalize.Seen{Revision: 7, At: at.Add(time.Nanosecond)}
			}
		},
		"not observed": func(i int, it *finalize.Item) { it.CurrentlyObserved = i%2 == 0 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, _ := open(t)
			vessel := uuid.New()
			items := make([]finalize.Item, 600)
			for i := range items {
				items[i] = finalize.Item{Key: catalog.Key{Kind: catalog.KindSource, SourceRef: fmt.Sprintf("src.%03d", i)},
					Record: fmt.Appendf(nil, `{"n":%d}`, i), FirstSeen: shared, LastSeen: shared, CurrentlyObserved: true}
				odd(i, &items[i])
			}
			var got []finalize.Item
			require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
				if err := tx.PutItems(ctx, items); err != nil {
					return err
				}
				var err error
				got, err = tx.Items(ctx)
				return err
			}))
			require.ElementsMatch(t, items, got)
		})
	}
}
