package memstore_test

import (
	"testing"

	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
)

// TestConformance runs the outbox conformance suite on Store.
func TestConformance(t *testing.T) {
	outboxtest.Run(t, func(*testing.T) outbox.Store { return memstore.New() })
}

func TestStartMemoryConformance(t *testing.T) {
	outboxtest.RunStartMemory(t, func(*testing.T) outbox.StartMemory { return memstore.New() })
}
