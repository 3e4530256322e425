package httpbinding

// WithManifestIndexes makes the Handler accept manifest indexes (SPEC.md
// §6.7), entity type sourcecatalog.ManifestIndexEntityType, and stage them
// through finalize.Receiver.StageManifestIndex: the manifest and every
// chunk the receiver holds for the vessel in one request, answered with a
// receipt naming the chunks still missing. It is off by default: an index
// is then refused as an unknown entity type (422 unsupported at
// entity_type). Turned on, the Handler declares the capability
// CapabilityManifestIndex to its senders (unless WithCapabilities says
// otherwise). Over a Receiver whose store's transactions are not
// finalize.PayloadTx, every chunk of an index is missing, and sent whole.
func WithManifestIndexes(on bool) HandlerOption { return func(h *Handler) { h.index = on } }

// indexDeclaration is the declaration of a Handler that accepts manifest
// indexes, and chunk references when refs.
func indexDeclaration(refs bool) []byte {
	names := []string{CapabilityManifestIndex, CapabilityRequestGzip}
	if refs {
		names = append(names, CapabilityChunkReference)
	}
	d, err := NewDeclaration(names...)
	if err != nil {
		panic("httpbinding: " + err.Error()) // the library's own names
	}
	return d.Canonical()
}
