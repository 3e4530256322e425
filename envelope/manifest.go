package envelope

import (
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// A Manifest is the header of a snapshot. Its protocol, scope,
// inventory_coverage and transport_complete members have one accepted value
// each in protocol v2 and are therefore implied, not stored.
type Manifest struct {
	VesselID       uuid.UUID
	SnapshotID     uuid.UUID // random (version 4)
	Revision       int64     // 1..2^53-1, monotonic per vessel
	DiscoveredAt   time.Time // not an ordering key
	ChunkCount     int       // 1..MaxChunks
	RecordCount    int       // 0..MaxRecords
	DocumentSHA256 canonical.Digest
}

var manifestFields = []string{
	"chunk_count", "discovered_at_utc", "document_sha256", "inventory_coverage",
	"protocol", "record_count", "revision", "scope", "snapshot_id",
	"transport_complete", "vessel_id",
}

// Canonical returns the manifest's canonical bytes, the payload of its outbox
// entity.
func (m *Manifest) Canonical() []byte {
	b := make([]byte, 0, 420)
	b = append(b, `{"chunk_count":`...)
	b = strconv.AppendInt(b, int64(m.ChunkCount), 10)
	b = append(b, `,"discovered_at_utc":"`...)
	b = append(b, FormatTime(m.DiscoveredAt)...)
	b = append(b, `","document_sha256":"`...)
	b = m.DocumentSHA256.AppendHex(b)
	b = append(b, `","inventory_coverage":"`+sourcecatalog.Coverage+`","protocol":"`+sourcecatalog.Protocol+`","record_count":`...)
	b = strconv.AppendInt(b, int64(m.RecordCount), 10)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, m.Revision, 10)
	b = append(b, `,"scope":"`+sourcecatalog.Scope+`","snapshot_id":"`...)
	b = append(b, m.SnapshotID.String()...)
	b = append(b, `","transport_complete":true,"vessel_id":"`...)
	b = append(b, m.VesselID.String()...)
	return append(b, `"}`...)
}

// Check validates every field of m against the protocol's domains.
func (m *Manifest) Check() error {
	if err := checkVesselID(m.VesselID); err != nil {
		return err
	}
	if err := checkSnapshotID(m.SnapshotID); err != nil {
		return err
	}
	if err := checkRevision(m.Revision); err != nil {
		return err
	}
	if err := checkTime(m.DiscoveredAt); err != nil {
		return err
	}
	switch {
	case m.ChunkCount < 1:
		return invalid("chunk_count", "must be at least 1")
	case m.ChunkCount > sourcecatalog.MaxChunks:
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 256 chunks").AtField("chunk_count")
	case m.RecordCount < 0:
		return invalid("record_count", "must not be negative")
	case m.RecordCount > sourcecatalog.MaxRecords:
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 25600 records").AtField("record_count")
	}
	return nil
}

func checkTime(t time.Time) error {
	if t.IsZero() {
		return invalid("discovered_at_utc", "must be set")
	}
	if _, err := ParseTime(FormatTime(t)); err != nil {
		return invalid("discovered_at_utc", "year out of range")
	}
	return nil
}

// MaxMessageSize bounds the raw JSON text the decoders accept, whitespace
// included; larger input is refused with ErrLimitExceeded before parsing.
// Canonical messages are at most MaxRequest bytes.
const MaxMessageSize = 4 * sourcecatalog.MaxRequest

// DecodeManifest strictly decodes a manifest from JSON text in any member
// order and whitespace. It refuses unknown, missing and duplicate members,
// wrong JSON types, integers spelled other than as digits, non-canonical
// UUIDs and timestamps, values out of range, another protocol, scope or
// coverage (ErrUnsupported), and transport_complete other than true
// (ErrIncompleteScan).
func DecodeManifest(raw []byte) (Manifest, error) {
	msg, err := parseMessage(raw, false)
	if err != nil {
		return Manifest{}, err
	}
	var vals [11]int
	if err := msg.members(manifestFields, vals[:]); err != nil {
		return Manifest{}, err
	}
	var m Manifest
	for k, v := range vals {
		if err := m.decodeField(&msg, manifestFields[k], v); err != nil {
			return Manifest{}, err
		}
	}
	if err := m.Check(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// decodeField reads the member name, whose value is at msg.b[v]. Counts
// are read in 0..2^53-1 here; Check classifies their range (SPEC.md §10.3).
func (m *Manifest) decodeField(msg *message, name string, v int) error {
	var err error
	var n int64
	switch name {
	case "chunk_count":
		n, err = msg.integer(v, name, 0, sourcecatalog.MaxRevision)
		m.ChunkCount = int(n)
	case "discovered_at_utc":
		var s string
		if s, err = msg.str(v, name); err == nil {
			if m.DiscoveredAt, err = ParseTime(s); err != nil {
				err = atField(err, name)
			}
		}
	case "document_sha256":
		m.DocumentSHA256, err = msg.digest(v, name)
	case "inventory_coverage":
		err = msg.constant(v, name, sourcecatalog.Coverage)
	case "protocol":
		err = msg.constant(v, name, sourcecatalog.Protocol)
	case "record_count":
		n, err = msg.integer(v, name, 0, sourcecatalog.MaxRevision)
		m.RecordCount = int(n)
	case "revision":
		m.Revision, err = msg.integer(v, name, 1, sourcecatalog.MaxRevision)
	case "scope":
		err = msg.constant(v, name, sourcecatalog.Scope)
	case "snapshot_id":
		if m.SnapshotID, err = msg.uuid(v, name); err == nil {
			err = checkSnapshotID(m.SnapshotID)
		}
	case "transport_complete":
		var complete bool
		if complete, err = msg.boolean(v, name, "must be the JSON literal true"); err == nil && !complete {
			err = sourcecatalog.Errorf(sourcecatalog.ErrIncompleteScan, "the snapshot does not claim transport completeness").AtField(name)
		}
	case "vessel_id":
		m.VesselID, err = msg.uuid(v, name)
	}
	return err
}
