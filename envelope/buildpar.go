package envelope

import (
	"crypto/sha256"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// cutAndDigest cuts the sorted records into chunks as cutFrom does and
// returns the chunks with the snapshot's document_sha256, using every core.
//
// The wrapped request limit rarely binds, so the chunks are cut in two
// steps: plan finds the cut points the record and body limits alone give,
// then those chunks are assembled, hashed and measured in parallel while
// another goroutine hashes the document from the chunks' bytes as they
// become ready. Up to the first planned chunk whose wrapped request is
// over the limit, the plan is exactly what the sequential chunker cuts; from
// there on, cutFrom continues sequentially. The result, like any error, is
// therefore the sequential one, whatever the scheduling.
func cutAndDigest(h *chunkHeader, s *sortedRecords, w Wrapper) ([]*Chunk, canonical.Digest, error) {
	spans := plan(s)
	b := newChunkBuild(h, s, spans, w)
	b.run()
	chunks := b.fitting()
	doc := b.doc
	if len(chunks) < len(spans) || len(spans) == 0 || spans[len(spans)-1].end < len(s.records) {
		var err error
		if chunks, err = cutFrom(h, s, w, chunks); err != nil {
			return nil, canonical.Digest{}, err
		}
		doc = documentDigest(chunks)
	}
	return chunks, doc, nil
}

// A span is a planned chunk: records[start:end], whose canonical body,
// {"records":[...]}, is body bytes long.
type span struct{ start, end, body int }

// plan returns the chunks the greedy chunker cuts when every wrapped
// request fits: each takes records while the record and body limits allow,
// up to the next of s.bounds.
// It stops where the chunker would fail for a limit of its own (the chunk
// count, a record too large for a body) and leaves that to cutFrom.
func plan(s *sortedRecords) []span {
	canon := s.canon
	spans := make([]span, 0, len(canon)/sourcecatalog.MaxRecordsPerChunk+len(s.bounds)+1)
	for start := 0; start < len(canon) || len(spans) == 0; {
		end, body := bodyFit(canon, start, s.nextBoundary(start))
		if len(spans) == sourcecatalog.MaxChunks || end == start && start < len(canon) {
			break
		}
		spans = append(spans, span{start, end, body})
		start = end
	}
	return spans
}

// A chunkBuild assembles planned chunks in parallel.
//
// The planned chunks and their canonical bytes are carved out of two
// allocations, one array of Chunks and one of bytes, instead of a few
// hundred: large allocations cost the allocator and the garbage collector
// less, and Build's time goes mostly to hashing bytes it has in hand. The
// price is that a caller keeping one chunk of a snapshot keeps the bytes of
// every planned chunk alive.
type chunkBuild struct {
	h     *chunkHeader
	s     *sortedRecords
	spans []span
	w     Wrapper

	next   atomic.Int64    // the next span to assemble
	chunks []*Chunk        // by span
	fit    []bool          // by span: the wrapped request is within the limit
	ready  []chan struct{} // by span: closed once chunks[k] and fit[k] are set
	doc    canonical.Digest

	// bytes[at[k]:at[k+1]] is where chunks[k]'s canonical bytes go.
	bytes []byte
	at    []int
}

func newChunkBuild(h *chunkHeader, s *sortedRecords, spans []span, w Wrapper) *chunkBuild {
	b := &chunkBuild{
		h: h, s: s, spans: spans, w: w,
		chunks: make([]*Chunk, len(spans)),
		fit:    make([]bool, len(spans)),
		ready:  make([]chan struct{}, len(spans)),
		at:     make([]int, len(spans)+1),
	}
	all := make([]Chunk, len(spans))
	for k := range b.ready {
		b.chunks[k] = &all[k]
		b.ready[k] = make(chan struct{})
		b.at[k+1] = b.at[k] + h.chunkLen(k, spans[k].body)
	}
	b.bytes = make([]byte, b.at[len(spans)])
	return b
}

// run assembles every planned chunk and hashes the document, on the
// calling goroutine and GOMAXPROCS-1 more.
//
// The document is hashed on the calling goroutine, which assembles chunks
// itself while the next one to hash is not ready (digest). Hashing it on a
// goroutine of its own that waits for each chunk would leave that
// goroutine runnable but unscheduled once its chunk is ready: the
// assembling goroutines never block, and Go preempts them for it only
// after 10 ms, so the hash would mostly run alone after the last chunk,
// beside an idle core.
func (b *chunkBuild) run() {
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(b.spans)) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b.assembleNext() {
			}
		}()
	}
	b.digest()
	wg.Wait()
}

// assembleNext assembles the next planned chunk no goroutine has taken,
// and reports whether there was one.
func (b *chunkBuild) assembleNext() bool {
	k := int(b.next.Add(1) - 1)
	if k >= len(b.spans) {
		return false
	}
	c := b.chunks[k]
	buf := b.bytes[b.at[k]:b.at[k]:b.at[k+1]]
	assembleChunkInto(c, buf, b.h, k, b.s, b.spans[k].start, b.spans[k].end)
	b.fit[k] = fits(b.w, c)
	close(b.ready[k])
	return true
}

// digest hashes the document from the planned chunks' bytes, in index
// order, as each becomes ready, assembling chunks while the next is not.
// The result is the document_sha256 when the planned chunks are the
// snapshot's.
func (b *chunkBuild) digest() {
	h := sha256.New()
	h.Write([]byte(bodyOpen))
	first := true
	for k := range b.ready {
		b.await(k)
		chunk := b.chunks[k]
		if chunk.recStart == chunk.recEnd {
			continue
		}
		if !first {
			h.Write([]byte{','})
		}
		first = false
		h.Write(chunk.canon[chunk.recStart:chunk.recEnd])
	}
	h.Write([]byte(bodyClose))
	h.Sum(b.doc[:0])
}

// await returns once planned chunk k is ready, assembling other chunks
// meanwhile while any is left to take.
func (b *chunkBuild) await(k int) {
	for {
		select {
		case <-b.ready[k]:
			return
		default:
		}
		if !b.assembleNext() {
			<-b.ready[k] // every chunk is taken: k is being assembled
			return
		}
	}
}

// fitting returns the planned chunks up to the first whose wrapped request
// is over the limit.
func (b *chunkBuild) fitting() []*Chunk {
	for k, ok := range b.fit {
		if !ok {
			return b.chunks[:k:k]
		}
	}
	return b.chunks
}

// assembleChunk is newChunk of the sorted records [start:end], reading
// their canonical bytes from s.canon: the chunk's canonical bytes and its
// payload hash, computed over the records as they sit in those bytes.
func assembleChunk(h *chunkHeader, index int, s *sortedRecords, start, end int) *Chunk {
	c := new(Chunk)
	assembleChunkInto(c, nil, h, index, s, start, end)
	return c
}

// assembleChunkInto is assembleChunk into c, appending the canonical bytes
// to buf, which is empty and has room for them (chunkLen) or is nil.
func assembleChunkInto(c *Chunk, buf []byte, h *chunkHeader, index int, s *sortedRecords, start, end int) {
	canon := s.canon[start:end]
	*c = Chunk{
		vesselID: h.vesselID, snapshotID: h.snapshotID, revision: h.revision,
		index: index, records: s.records[start:end:end],
	}
	b := buf
	if b == nil {
		body := len(bodyOpen) + len(bodyClose) + max(len(canon)-1, 0)
		for _, r := range canon {
			body += len(r)
		}
		b = make([]byte, 0, h.chunkLen(index, body))
	}
	b = append(b, `{"chunk_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"payload_sha256":"`...)
	hashAt := len(b)
	b = append(b, zeroHex[:]...)
	b = append(b, chunkRecordsOpen...)
	c.recStart = len(b)
	for i, r := range canon {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	c.recEnd = len(b)
	b = append(b, ']')
	c.canon = append(b, h.tail...)

	d := sha256.New()
	c.writeBody(d)
	d.Sum(c.payload[:0])
	c.payload.AppendHex(c.canon[hashAt:hashAt])
}

// chunkRecordsOpen is the canonical text of a chunk from the end of its
// payload hash to the start of its records.
const chunkRecordsOpen = `","protocol":"` + sourcecatalog.Protocol + `","records":[`

// chunkLen returns the length of the canonical bytes of chunk index of the
// snapshot, whose canonical body is body bytes long.
func (h *chunkHeader) chunkLen(index, body int) int {
	digits := 1
	for n := index; n >= 10; n /= 10 {
		digits++
	}
	return len(`{"chunk_index":`) + digits + len(`,"payload_sha256":"`) + len(zeroHex) + len(chunkRecordsOpen) +
		body - len(bodyOpen) - len(bodyClose) + len("]") + len(h.tail)
}
