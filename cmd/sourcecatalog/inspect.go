package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

var inspectCommand = &command{
	name:     "inspect",
	synopsis: "HEADER_FILE CHUNKS_FILE",
	summary:  "summarise a snapshot: identity, records, value types, units, chunk fill",
	help:     helpText("inspect") + readingHelp,
	run:      runInspect,
}

func runInspect(e *env, c *command, args []string) int {
	s, status := readSnapshot(e, c, args)
	if s == nil {
		return status
	}
	inspect(e.stdout, s)
	return exitOK
}

// inspect writes the summary of a verified snapshot.
func inspect(out io.Writer, s *envelope.Snapshot) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	m := &s.Manifest
	wrapper := envelope.DefaultWrapper{}

	fmt.Fprintf(w, "snapshot\t%s\n", m.SnapshotID)
	fmt.Fprintf(w, "  vessel\t%s\n", m.VesselID)
	fmt.Fprintf(w, "  revision\t%d\n", m.Revision)
	fmt.Fprintf(w, "  discovered at\t%s\n", envelope.FormatTime(m.DiscoveredAt))
	fmt.Fprintf(w, "  protocol\t%s, scope %s, coverage %s\n", sourcecatalog.Protocol, sourcecatalog.Scope, sourcecatalog.Coverage)
	fmt.Fprintf(w, "  document sha256\t%s\n", m.DocumentSHA256)
	manifestSize := wrapper.WrappedSize(sourcecatalog.ManifestEntityType, envelope.ManifestKey(m.SnapshotID), m.Canonical())
	fmt.Fprintf(w, "  manifest request\t%s\n", fill(manifestSize, sourcecatalog.MaxRequest))

	kinds := map[catalog.Kind]int{}
	valueTypes := map[catalog.ValueType]int{}
	var unitNull, unitAbsent int
	symbols := map[string]int{}
	sourceTypes := map[string]int{}
	for _, c := range s.Chunks {
		for _, r := range c.Records() {
			kinds[r.Kind()]++
			if p, ok := r.AsPath(); ok {
				switch {
				case p.Unit.IsNone():
					unitNull++
				case p.Unit.IsUnknown():
					unitAbsent++
				default:
					symbols[p.Unit.Symbol()]++
				}
			}
			if src, ok := r.AsSource(); ok {
				typ := "(no type)"
				if src.Type != nil {
					typ = *src.Type
				}
				sourceTypes[typ]++
			}
			if o, ok := r.AsObservation(); ok {
				valueTypes[o.ValueType]++
			}
		}
	}

	fmt.Fprintf(w, "\nrecords\t%d\n", m.RecordCount)
	for _, k := range []catalog.Kind{catalog.KindPath, catalog.KindSource, catalog.KindObservation} {
		fmt.Fprintf(w, "  %s\t%d\n", k, kinds[k])
	}

	fmt.Fprintf(w, "\nvalue types\t%d\n", kinds[catalog.KindObservation])
	for _, vt := range catalog.ValueTypes() {
		fmt.Fprintf(w, "  %s\t%d\n", vt, valueTypes[vt])
	}

	fmt.Fprintf(w, "\nunits\t%d\n", kinds[catalog.KindPath])
	fmt.Fprintf(w, "  SI symbol\t%d\t%s\n", kinds[catalog.KindPath]-unitNull-unitAbsent, histogram(symbols))
	fmt.Fprintf(w, "  null\t%d\n", unitNull)
	fmt.Fprintf(w, "  absent\t%d\n", unitAbsent)

	fmt.Fprintf(w, "\nsource types\t%d\n", kinds[catalog.KindSource])
	for _, typ := range sortedKeys(sourceTypes) {
		fmt.Fprintf(w, "  %s\t%d\n", printable(typ), sourceTypes[typ])
	}

	fmt.Fprintf(w, "\nchunks\t%d of %d\n", len(s.Chunks), sourcecatalog.MaxChunks)
	fmt.Fprintf(w, "  chunk\trecords\tbody bytes\trequest bytes\n")
	var recs, body, req stats
	for _, c := range s.Chunks {
		n, b := len(c.Records()), c.BodyLen()
		r := wrapper.WrappedSize(sourcecatalog.ChunkEntityType, envelope.ChunkKey(m.SnapshotID, c.Index()), c.Canonical())
		recs.add(n)
		body.add(b)
		req.add(r)
		fmt.Fprintf(w, "  %d\t%s\t%s\t%s\n", c.Index(),
			fill(n, sourcecatalog.MaxRecordsPerChunk), fill(b, sourcecatalog.MaxChunkBody), fill(r, sourcecatalog.MaxRequest))
	}
	for _, row := range []struct {
		name string
		get  func(*stats) float64
	}{
		{"min", func(s *stats) float64 { return float64(s.min) }},
		{"avg", (*stats).avg},
		{"max", func(s *stats) float64 { return float64(s.max) }},
	} {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", row.name,
			fillf(row.get(&recs), sourcecatalog.MaxRecordsPerChunk),
			fillf(row.get(&body), sourcecatalog.MaxChunkBody),
			fillf(row.get(&req), sourcecatalog.MaxRequest))
	}
	w.Flush()
}

// fill renders n against its limit: "100/100 (100.0%)".
func fill(n, limit int) string { return fillf(float64(n), limit) }

func fillf(n float64, limit int) string {
	num := fmt.Sprintf("%.0f", n)
	if n != float64(int64(n)) {
		num = fmt.Sprintf("%.1f", n)
	}
	return fmt.Sprintf("%s/%d (%.1f%%)", num, limit, 100*n/float64(limit))
}

type stats struct {
	n, sum, min, max int
}

func (s *stats) add(v int) {
	if s.n == 0 || v < s.min {
		s.min = v
	}
	s.max = max(s.max, v)
	s.sum += v
	s.n++
}

func (s *stats) avg() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.sum) / float64(s.n)
}

// histogramTop bounds the keys a histogram names.
const histogramTop = 16

// histogram renders counts by key, most frequent first: "rad 12, m/s 6".
func histogram(counts map[string]int) string {
	keys := sortedKeys(counts)
	slices.SortStableFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	var parts []string
	for i, k := range keys {
		if i == histogramTop {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", printable(k), counts[k]))
	}
	return strings.Join(parts, ", ")
}

// printable returns s, or its quoted Go form when it holds characters a
// terminal would interpret (units, labels and types may hold any UTF-8).
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
