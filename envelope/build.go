package envelope

import (
	"crypto/sha256"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A Snapshot is a manifest with its complete chunk set, in index order.
type Snapshot struct {
	Manifest Manifest
	Chunks   []*Chunk
}

// Input is what one discovery cycle hands to Build.
type Input struct {
	VesselID     uuid.UUID
	SnapshotID   uuid.UUID // random (version 4), kept across retries of the cycle
	Revision     int64
	DiscoveredAt time.Time
	Records      []*catalog.Record // validated records, in any order

	// Truncated and PaginationUncertain report what the discovery scan
	// saw. Either one set makes Build fail with ErrIncompleteScan: a
	// complete manifest is never emitted for a partial scan.
	Truncated           bool
	PaginationUncertain bool
}

// An Option configures Build.
type Option func(*config)

type config struct {
	wrapper        Wrapper
	contentDefined bool
}

// WithWrapper makes Build measure outbox requests with w instead of
// DefaultWrapper.
func WithWrapper(w Wrapper) Option { return func(c *config) { c.wrapper = w } }

// Build orders the records canonically, checks their integrity, cuts them
// into chunks and computes the payload and document hashes.
//
// It fails, building nothing, with ErrIncompleteScan when the scan was
// incomplete; ErrInvalidValue for a header field out of its domain;
// ErrIntegrity when the records break an integrity rule (the record index
// is the position in in.Records); ErrLimitExceeded for more than MaxRecords
// records or MaxChunks chunks; and ErrRecordTooLarge when one record cannot
// fit alone in a chunk. The caller's slice is not modified.
//
// Build runs on up to GOMAXPROCS goroutines; its result, like its error,
// does not depend on their scheduling: the same input gives the same bytes.
func Build(in Input, opts ...Option) (*Snapshot, error) {
	cfg := config{wrapper: DefaultWrapper{}}
	for _, o := range opts {
		o(&cfg)
	}
	if in.Truncated || in.PaginationUncertain {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrIncompleteScan, "the scan reported truncation or pagination uncertainty")
	}
	m := Manifest{
		VesselID: in.VesselID, SnapshotID: in.SnapshotID, Revision: in.Revision,
		DiscoveredAt: in.DiscoveredAt.UTC(), ChunkCount: 1, RecordCount: len(in.Records),
	}
	if len(in.Records) > sourcecatalog.MaxRecords {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 25600 records").AtField("records")
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	for i, r := range in.Records {
		if r == nil {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "nil record").AtRecord(i)
		}
	}
	s := sortForBuild(in.Records)
	// The integrity check runs beside the chunking, over the keys the sort
	// copied; its verdict comes first.
	checked := make(chan error, 1)
	go func() { checked <- s.check() }()
	h := newChunkHeader(m.VesselID, m.SnapshotID, m.Revision)
	cut := cutAndDigest
	if cfg.contentDefined {
		cut = cutContentDefined
	}
	chunks, doc, err := cut(h, &s, cfg.wrapper)
	checkErr := <-checked
	s.release()
	if err := checkErr; err != nil {
		return nil, relocate(err, s.order)
	}
	if err != nil {
		return nil, relocate(err, s.order)
	}
	m.ChunkCount = len(chunks)
	m.DocumentSHA256 = doc
	if cfg.wrapper.WrappedSize(sourcecatalog.ManifestEntityType, ManifestKey(m.SnapshotID), m.Canonical()) > sourcecatalog.MaxRequest {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the wrapped manifest exceeds the request limit")
	}
	return &Snapshot{Manifest: m, Chunks: chunks}, nil
}

// relocate maps the record indexes of err's problems from sorted positions
// back to input positions.
func relocate(err error, order []int32) error {
	problems := sourcecatalog.Problems(err)
	out := make([]error, len(problems))
	for i, p := range problems {
		if p.Record != sourcecatalog.NoIndex {
			p = p.AtRecord(int(order[p.Record]))
		}
		out[i] = p
	}
	return joinErrors(out)
}

func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// cutFrom is the greedy chunker: each chunk takes records in order until
// one more would exceed a limit, or would cross the next of s.bounds. For
// contiguous runs, greedy packing yields the fewest chunks. It goes on
// after chunks, the chunks it cuts from the first records; with none, it
// cuts them all.
func cutFrom(h *chunkHeader, s *sortedRecords, w Wrapper, chunks []*Chunk) ([]*Chunk, error) {
	records := s.records
	start := 0
	for _, c := range chunks {
		start += len(c.records)
	}
	for start < len(records) || len(chunks) == 0 {
		if len(chunks) == sourcecatalog.MaxChunks {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the records need more than 256 chunks")
		}
		end, _ := bodyFit(s.canon, start, s.nextBoundary(start))
		if end == start && start < len(records) {
			return nil, tooLarge(start, "canonical body")
		}
		c := assembleChunk(h, len(chunks), s, start, end)
		if !fits(w, c) {
			// The wrapped request is the binding limit: find the longest
			// prefix that fits. Size is monotonic in the prefix length.
			lo, hi := start, end-1 // records[start:lo] fits (or lo == start); [start:hi+1] does not
			for lo < hi {
				mid := (lo + hi + 1) / 2
				if fits(w, assembleChunk(h, len(chunks), s, start, mid)) {
					lo = mid
				} else {
					hi = mid - 1
				}
			}
			if lo == start {
				if start == len(records) {
					// Not even the empty chunk fits: no record to blame.
					return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "an empty chunk exceeds the wrapped request limit")
				}
				return nil, tooLarge(start, "wrapped outbox request")
			}
			end = lo
			c = assembleChunk(h, len(chunks), s, start, end)
		}
		chunks = append(chunks, c)
		start = end
	}
	return chunks, nil
}

// bodyFit returns the end of the longest run from start, up to stop, that
// respects the record and body limits, given the records' canonical bytes,
// and the length of that run's canonical body.
func bodyFit(canon [][]byte, start, stop int) (end, body int) {
	size := len(bodyOpen) + len(bodyClose)
	end = start
	for end < stop && end-start < sourcecatalog.MaxRecordsPerChunk {
		add := len(canon[end])
		if end > start {
			add++ // comma
		}
		if size+add > sourcecatalog.MaxChunkBody {
			break
		}
		size += add
		end++
	}
	return end, size
}

// fits reports whether chunk c's wrapped request is within MaxRequest.
func fits(w Wrapper, c *Chunk) bool {
	key := ChunkKey(c.snapshotID, c.index)
	if _, ok := w.(DefaultWrapper); ok && defaultWrappedBound(key, c.canon) <= sourcecatalog.MaxRequest {
		return true
	}
	return w.WrappedSize(sourcecatalog.ChunkEntityType, key, c.canon) <= sourcecatalog.MaxRequest
}

// defaultWrappedBound returns an upper bound of DefaultWrapper's
// WrappedSize of a chunk whose canonical bytes are canon, found without
// reading them: escaping canonical JSON text at most doubles it, since the
// text holds no control character (canonical strings escape them, SPEC.md
// §3.2, and nothing else may hold one), and the quotation marks and reverse
// solidi it does hold take two bytes each once escaped. A chunk under this
// bound fits without the pass over its bytes that WrappedSize makes, as
// most chunks do: a full body is half a request.
func defaultWrappedBound(key string, canon []byte) int {
	return DefaultWrapper{}.WrappedSize(sourcecatalog.ChunkEntityType, key, nil) + 2*len(canon)
}

func tooLarge(i int, limit string) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrRecordTooLarge, "the record alone exceeds the "+limit+" limit").AtRecord(i)
}

// documentDigest returns the document_sha256 of a snapshot cut into chunks:
// the hash of one body holding every chunk's records in index order.
func documentDigest(chunks []*Chunk) canonical.Digest {
	h := sha256.New()
	h.Write([]byte(bodyOpen))
	first := true
	for _, c := range chunks {
		if c.recStart == c.recEnd {
			continue
		}
		if !first {
			h.Write([]byte{','})
		}
		first = false
		h.Write(c.canon[c.recStart:c.recEnd])
	}
	h.Write([]byte(bodyClose))
	var d canonical.Digest
	h.Sum(d[:0])
	return d
}
