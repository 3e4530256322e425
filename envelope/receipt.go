package envelope

import (
	"strconv"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// MaxAnswerSize bounds the text of a receipt or a refusal that
// DecodeReceipt and DecodeRefusal accept (SPEC.md §9.2).
const MaxAnswerSize = 4096

// ReceiptStatus says what receiving a message did.
type ReceiptStatus string

// Receipt statuses (SPEC.md §9.1).
const (
	// Staged: the message is now durably staged.
	Staged ReceiptStatus = "staged"
	// AlreadyReceived: identical bytes were staged before; nothing changed.
	AlreadyReceived ReceiptStatus = "already_received"
)

// A Receipt is the receiver's answer to a message it staged: it
// acknowledges durable staging, never activation (SPEC.md §9.1). A retry
// of identical bytes gets a receipt that Matches the first, with status
// AlreadyReceived.
type Receipt struct {
	EntityType string // sourcecatalog.ManifestEntityType, ChunkEntityType or ManifestIndexEntityType
	VesselID   uuid.UUID
	SnapshotID uuid.UUID
	Revision   int64
	ChunkIndex int // sourcecatalog.NoIndex for a manifest
	// Digest is the SHA-256 acknowledged, sha256 on the wire: a chunk's
	// payload_sha256, or the SHA-256 of a manifest's or a manifest
	// index's canonical bytes.
	Digest canonical.Digest
	Status ReceiptStatus
	// Complete reports that, after this message, the receiver holds the
	// snapshot's manifest and every chunk: the server's cue to finalize.
	Complete bool
	// Missing is, for a manifest index's receipt only (missing_chunks on
	// the wire), the chunk indices below chunk_count at which no chunk is
	// staged after the message: the chunks the sender sends whole next
	// (SPEC.md §6.7). Empty for the other entity types.
	Missing ChunkSet
}

// Matches reports whether r and o acknowledge the same message: they are
// equal but for Status, Complete and Missing, which a retry's receipt may
// change (SPEC.md §9.3).
func (r Receipt) Matches(o Receipt) bool {
	r.Status, o.Status = "", ""
	r.Complete, o.Complete = false, false
	r.Missing, o.Missing = ChunkSet{}, ChunkSet{}
	return r == o
}

// Check reports the first member of r outside its domain, as DecodeReceipt
// would: ErrUnsupported for another entity type, ErrInvalidValue otherwise.
func (r Receipt) Check() error {
	if r.EntityType != sourcecatalog.ManifestIndexEntityType && r.Missing != (ChunkSet{}) {
		return sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "only a manifest index's receipt names missing chunks").AtField("missing_chunks")
	}
	switch r.EntityType {
	case sourcecatalog.ManifestEntityType, sourcecatalog.ManifestIndexEntityType:
		if r.ChunkIndex != sourcecatalog.NoIndex {
			return sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "a manifest's receipt has no chunk index").AtField("chunk_index")
		}
	case sourcecatalog.ChunkEntityType:
		if r.ChunkIndex < 0 || r.ChunkIndex >= sourcecatalog.MaxChunks {
			return invalid("chunk_index", "out of range")
		}
	default:
		return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "not a v2 entity type").AtField("entity_type")
	}
	if err := checkRevision(r.Revision); err != nil {
		return err
	}
	if err := checkSnapshotID(r.SnapshotID); err != nil {
		return err
	}
	if r.Status != Staged && r.Status != AlreadyReceived {
		return invalid("status", "must be staged or already_received")
	}
	return checkVesselID(r.VesselID)
}

// Canonical returns the receipt's canonical bytes. r must pass Check.
func (r Receipt) Canonical() []byte {
	b := make([]byte, 0, 384)
	b = append(b, '{')
	if r.ChunkIndex != sourcecatalog.NoIndex {
		b = append(b, `"chunk_index":`...)
		b = strconv.AppendInt(b, int64(r.ChunkIndex), 10)
		b = append(b, ',')
	}
	b = append(b, `"complete":`...)
	b = strconv.AppendBool(b, r.Complete)
	b = append(b, `,"entity_type":"`...)
	b = append(b, r.EntityType...)
	b = append(b, '"')
	if r.EntityType == sourcecatalog.ManifestIndexEntityType {
		b = append(b, `,"missing_chunks":`...)
		b = r.Missing.appendJSON(b)
	}
	b = append(b, `,"protocol":"`+sourcecatalog.Protocol+`","revision":`...)
	b = strconv.AppendInt(b, r.Revision, 10)
	b = append(b, `,"sha256":"`...)
	b = r.Digest.AppendHex(b)
	b = append(b, `","snapshot_id":"`...)
	b = append(b, r.SnapshotID.String()...)
	b = append(b, `","status":"`...)
	b = append(b, r.Status...)
	b = append(b, `","vessel_id":"`...)
	b = append(b, r.VesselID.String()...)
	return append(b, `"}`...)
}

var (
	manifestReceiptFields = []string{"complete", "entity_type", "protocol", "revision", "sha256", "snapshot_id", "status", "vessel_id"}
	chunkReceiptFields    = append([]string{"chunk_index"}, manifestReceiptFields...)
	indexReceiptFields    = []string{"complete", "entity_type", "missing_chunks", "protocol", "revision", "sha256", "snapshot_id", "status", "vessel_id"}
)

// DecodeReceipt strictly decodes a receipt from JSON text in any member
// order and whitespace, reporting the first problem in the order of
// SPEC.md §9.2: text over MaxAnswerSize bytes (ErrLimitExceeded),
// malformed JSON, a value other than an object (ErrInvalidValue), the
// entity type (ErrMissingField when absent, ErrInvalidValue when not a
// string, ErrUnsupported when not a v2 type), unknown and missing members,
// then each value in canonical name order: a manifest index's
// missing_chunks is an array (ErrInvalidValue) of chunk indices
// (ErrInvalidValue), each above the one before it (ErrIntegrity).
func DecodeReceipt(raw []byte) (Receipt, error) {
	msg, err := parseAnswer(raw)
	if err != nil {
		return Receipt{}, err
	}
	r := Receipt{ChunkIndex: sourcecatalog.NoIndex}
	et := msg.member("entity_type")
	if et < 0 {
		return Receipt{}, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField("entity_type")
	}
	s, err := msg.str(et, "entity_type")
	if err != nil {
		return Receipt{}, err
	}
	fields := chunkReceiptFields
	switch s {
	case sourcecatalog.ChunkEntityType:
		r.EntityType = sourcecatalog.ChunkEntityType
	case sourcecatalog.ManifestEntityType:
		r.EntityType = sourcecatalog.ManifestEntityType
		fields = manifestReceiptFields
	case sourcecatalog.ManifestIndexEntityType:
		r.EntityType = sourcecatalog.ManifestIndexEntityType
		fields = indexReceiptFields
	default:
		return Receipt{}, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "not a v2 entity type").AtField("entity_type")
	}
	var vals [9]int
	if err := msg.members(fields, vals[:]); err != nil {
		return Receipt{}, err
	}
	for k, name := range fields {
		if err := r.decodeField(&msg, name, vals[k]); err != nil {
			return Receipt{}, err
		}
	}
	return r, nil
}

// decodeField reads the member name, whose value is at msg.b[v].
func (r *Receipt) decodeField(msg *message, name string, v int) error {
	var err error
	switch name {
	case "chunk_index":
		var n int64
		n, err = msg.integer(v, name, 0, sourcecatalog.MaxChunks-1)
		r.ChunkIndex = int(n)
	case "missing_chunks":
		r.Missing, err = msg.chunkSet(v, name)
	case "complete":
		r.Complete, err = msg.boolean(v, name, "must be true or false")
	case "protocol":
		err = msg.constant(v, name, sourcecatalog.Protocol)
	case "revision":
		r.Revision, err = msg.integer(v, name, 1, sourcecatalog.MaxRevision)
	case "sha256":
		r.Digest, err = msg.digest(v, name)
	case "snapshot_id":
		if r.SnapshotID, err = msg.uuid(v, name); err == nil {
			err = checkSnapshotID(r.SnapshotID)
		}
	case "status":
		var s string
		if s, err = msg.str(v, name); err == nil {
			switch ReceiptStatus(s) {
			case Staged:
				r.Status = Staged
			case AlreadyReceived:
				r.Status = AlreadyReceived
			default:
				err = invalid(name, "must be staged or already_received")
			}
		}
	case "vessel_id":
		r.VesselID, err = msg.uuid(v, name)
	}
	return err
}

// parseAnswer brings a receipt or a refusal to canonical text, as
// parseMessage does; text over MaxAnswerSize bytes is refused first.
func parseAnswer(raw []byte) (message, error) {
	if len(raw) > MaxAnswerSize {
		return message{}, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "answer larger than "+strconv.Itoa(MaxAnswerSize)+" bytes")
	}
	return parseMessage(raw, false)
}
