package signalk

import (
	"context"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// DiscoverStart is Discover, and also returns the server start the scan
// read: the serverStartId of its hellos, the same before and after the
// model. A controller that settles by evidence (SPEC.md §12.7; package
// agent) remembers each start and compares the reads of one start.
func (c *Client) DiscoverStart(ctx context.Context) ([]*catalog.Record, string, error) {
	var start string
	records, err := c.Discover(context.WithValue(ctx, startKey{}, &start))
	if err != nil {
		return nil, "", err
	}
	return records, start, nil
}

// startKey keys the context value in which hello writes the start id it
// read, for DiscoverStart.
type startKey struct{}

// noteStart writes id where DiscoverStart's ctx asks for it.
func noteStart(ctx context.Context, id string) {
	if p, _ := ctx.Value(startKey{}).(*string); p != nil {
		*p = id
	}
}
