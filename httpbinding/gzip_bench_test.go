package httpbinding_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// BenchmarkHostileGzip posts the zip bomb — 30 MiB of zeros in a gzip
// member within the body cap — to the Handler, which answers 413 after
// decompressing 32,769 bytes (SPEC.md §11.5). Metrics, per request:
//   - alloc_MB: bytes allocated, in MB (target ≤ 1);
//   - ms: the time, in milliseconds (target ≤ 50).
func BenchmarkHostileGzip(b *testing.B) {
	h := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA))
	body := bomb()
	post := func() {
		req := httptest.NewRequest(http.MethodPost, "/v2/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			b.Fatalf("the bomb was answered %d: %s", rec.Code, rec.Body)
		}
	}
	post() // the decompressor pool filled
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		post()
	}
	b.StopTimer()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/1e6, "alloc_MB")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/1e6, "ms")
}

// requestBodies returns the wrapped requests of the first snapshot of
// records, as a Client sends them without compression.
func requestBodies(b *testing.B, records func() []*catalog.Record) [][]byte {
	b.Helper()
	var out [][]byte
	for _, e := range commitRecords(b, vesselA, uuid.Nil, records()).entries {
		out = append(out, wrap(e))
	}
	return out
}

// boats are the snapshots BenchmarkRequestBytes measures: the example
// boat (examples.Boat) and a typical boat of 1,500 records in 15 chunks
// (examples.Scaled, as mysqlstore's BenchmarkB6Fleet).
var boats = []struct {
	name    string
	records func() []*catalog.Record
	entries int
}{
	{"example", examples.Boat, 3},
	{"typical", func() []*catalog.Record { return examples.Scaled(1500) }, 16},
}

// BenchmarkRequestBytes gzips the request bodies of a first snapshot as a
// Client with WithRequestCompression does (gzip.BestCompression; a body
// that does not shrink goes plain). Metrics, per snapshot:
//   - plain_bytes, gzip_bytes: the bodies' bytes without and with
//     compression;
//   - gzip_x_plain: gzip_bytes over plain_bytes (target ≤ 0.25).
//
// ns/op is the time to compress the snapshot's bodies.
func BenchmarkRequestBytes(b *testing.B) {
	for _, boat := range boats {
		b.Run(boat.name, func(b *testing.B) { benchGzipLevel(b, boat.records, boat.entries, gzip.BestCompression) })
	}
}

// BenchmarkRequestGzipLevels measures what chose the Client's level:
// the metrics of BenchmarkRequestBytes at gzip.BestSpeed, the default
// and gzip.BestCompression.
func BenchmarkRequestGzipLevels(b *testing.B) {
	for _, boat := range boats {
		for _, level := range []struct {
			name  string
			level int
		}{{"speed", gzip.BestSpeed}, {"default", gzip.DefaultCompression}, {"best", gzip.BestCompression}} {
			b.Run(boat.name+"/"+level.name, func(b *testing.B) { benchGzipLevel(b, boat.records, boat.entries, level.level) })
		}
	}
}

func benchGzipLevel(b *testing.B, records func() []*catalog.Record, entries, level int) {
	bodies := requestBodies(b, records)
	if len(bodies) != entries {
		b.Fatalf("%d requests, want %d", len(bodies), entries)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level) // reused, as the Client pools its writers
	if err != nil {
		b.Fatal(err)
	}
	var plain, zipped int
	b.ResetTimer()
	for range b.N {
		plain, zipped = 0, 0
		for _, body := range bodies {
			buf.Reset()
			zw.Reset(&buf)
			_, _ = zw.Write(body)
			_ = zw.Close()
			plain += len(body)
			zipped += min(buf.Len(), len(body))
		}
	}
	b.ReportMetric(float64(plain), "plain_bytes")
	b.ReportMetric(float64(zipped), "gzip_bytes")
	b.ReportMetric(float64(zipped)/float64(plain), "gzip_x_plain")
}
