package outbox_test

import (
	"testing"

	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
)

// TestMemStore runs the outbox conformance suite on MemStore.
func TestMemStore(t *testing.T) {
	outboxtest.Run(t, func(*testing.T) outbox.Store { return outbox.NewMemStore() })
}
