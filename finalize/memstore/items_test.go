package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// inventoryModel applies the Tx contract of PutItems and RetireItems to a
// map, one item or key after the other.
type inventoryModel map[catalog.Key]finalize.Item

func (m inventoryModel) put(items []finalize.Item) {
	for _, it := range items {
		if old, ok := m[it.Key]; ok {
			it.FirstSeen = old.FirstSeen
		}
		m[it.Key] = it
	}
}

func (m inventoryModel) retire(keys []catalog.Key, last finalize.Seen) {
	for _, k := range keys {
		if it, ok := m[k]; ok {
			it.CurrentlyObserved, it.LastSeen = false, last
			m[k] = it
		}
	}
}

func (m inventoryModel) items() []finalize.Item {
	out := make([]finalize.Item, 0, len(m))
	for _, it := range m {
		out = append(out, it)
	}
	return sorted(out)
}

func sorted(items []finalize.Item) []finalize.Item {
	slices.SortFunc(items, func(a, b finalize.Item) int { return a.Key.Compare(b.Key) })
	return items
}

// The inventory, kept sorted by key, behaves as the Tx contract says for
// batches in any order, with keys repeated within a batch and across
// batches, in transactions that commit or roll back: the items read back
// within the transaction and after it are the model's.
func TestInventoryMatchesTheContract(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]catalog.Key, 40)
	for i := range keys {
		keys[i] = catalog.Key{Kind: catalog.Kind(i % 3), Path: fmt.Sprintf("p.%02d", i/3), SourceRef: fmt.Sprintf("s%d", i%2)}
	}
	seen := func(n int) finalize.Seen {
		return finalize.Seen{Revision: int64(n), At: time.Unix(int64(n), 0).UTC()}
	}
	batch := func(step, n int, ordered bool) []finalize.Item {
		var items []finalize.Item
		for j := range n {
			k := keys[rng.IntN(len(keys))]
			items = append(items, finalize.Item{Key: k, Record: fmt.Appendf(nil, "r%d.%d", step, j),
				FirstSeen: seen(step*100 + j), LastSeen: seen(step), CurrentlyObserved: rng.IntN(2) == 0})
		}
		if ordered {
			items = slices.CompactFunc(sorted(items), func(a, b finalize.Item) bool { return a.Key == b.Key })
		}
		return items
	}
	store, committed := memstore.New(), inventoryModel{}
	for step := range 300 {
		m := inventoryModel{}
		for k, v := range committed {
			m[k] = v
		}
		commit := rng.IntN(3) > 0
		err := store.WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
			for op := range 1 + rng.IntN(3) {
				n, ordered := rng.IntN(30), rng.IntN(2) == 0
				if rng.IntN(3) > 0 {
					items := batch(step, n, ordered)
					given := slices.Clone(items)
					require.NoError(t, tx.PutItems(ctx, items))
					require.Equal(t, given, items, "PutItems must not modify its argument")
					m.put(items)
				} else {
					var ks []catalog.Key
					for range n {
						ks = append(ks, keys[rng.IntN(len(keys))])
					}
					if ordered {
						ks = slices.Compact(slices.SortedFunc(slices.Values(ks), catalog.Key.Compare))
					}
					given := slices.Clone(ks)
					require.NoError(t, tx.RetireItems(ctx, ks, seen(step*10+op)))
					require.Equal(t, given, ks, "RetireItems must not modify its argument")
					m.retire(ks, seen(step*10+op))
				}
				got, err := tx.Items(ctx)
				require.NoError(t, err)
				require.Equal(t, m.items(), sorted(got), "step %d op %d: items within the transaction", step, op)
			}
			if !commit {
				return errors.New("roll back")
			}
			return nil
		})
		if commit {
			require.NoError(t, err)
			committed = m
		}
		require.NoError(t, store.WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
			got, err := tx.Items(ctx)
			require.NoError(t, err)
			require.Equal(t, committed.items(), sorted(got), "step %d: committed items", step)
			return nil
		}))
	}
}
