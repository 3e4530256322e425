package httpbinding

// WithChunkReferences makes the Handler accept chunk references (SPEC.md
// §6.6), entity type sourcecatalog.ChunkRefEntityType, and stage them
// through finalize.Receiver.StageChunkRef. It is off by default: a
// reference is then refused as an unknown entity type (422 unsupported at
// entity_type). Turned on, the Handler declares the capability
// CapabilityChunkReference to its senders (unless WithCapabilities says
// otherwise). Turn it on over a Receiver whose store's transactions are
// finalize.PayloadTx: over another, every reference is refused
// reference_unavailable and sent again whole.
func WithChunkReferences(on bool) HandlerOption { return func(h *Handler) { h.refs = on } }

// ChunkReferences reports whether the Handler accepts chunk references,
// for a server's capability declaration.
func (h *Handler) ChunkReferences() bool { return h.refs }
