package signalk

import (
	"bufio"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Hostile models whose mapping cost grew with the product of two of their
// sizes. Each is built from n; n is chosen so that the quadratic mapping
// allocates well over a hundred times what parsing the model does.
var hostileModels = []struct {
	name  string
	model func(n int) []byte
	n     int
}{
	// n refs bus.<i>, resolved against one bus of 20n devices: every
	// resolution scanned the whole bus.
	{"refs into a big bus", func(n int) []byte {
		var self, src strings.Builder
		self.WriteString("{")
		src.WriteString(`{"bus":{`)
		for i := range n {
			if i > 0 {
				self.WriteString(",")
			}
			fmt.Fprintf(&self, `"p%d":{"value":1,"$source":"bus.%d"}`, i, i)
		}
		for i := range 20 * n {
			if i > 0 {
				src.WriteString(",")
			}
			fmt.Fprintf(&src, `"%d":{"n2k":{"a":1}}`, i)
		}
		return []byte(model(self.String()+"}", src.String()+"}}"))
	}, 1000},
	// n empty objects under one member whose name is 64n bytes long:
	// every member built its path from the whole prefix.
	{"a long prefix over many members", func(n int) []byte {
		var self strings.Builder
		self.WriteString(`{"` + strings.Repeat("a", 64*n) + `":{`)
		for i := range n {
			if i > 0 {
				self.WriteString(",")
			}
			fmt.Fprintf(&self, `"%d":{"value":null,"$source":"x"}`, i)
		}
		return []byte(model(self.String()+"}}", "{}"))
	}, 1024},
	// n refs of 120 dots, each a provider entry, beside 20n other
	// providers: every split of every ref scanned the sources tree.
	{"dotted refs among many providers", func(n int) []byte {
		var self, src strings.Builder
		self.WriteString("{")
		src.WriteString("{")
		dots := strings.Repeat("a.", 120)
		for i := range n {
			if i > 0 {
				self.WriteString(",")
				src.WriteString(",")
			}
			fmt.Fprintf(&self, `"p%d":{"value":1,"$source":"%s%d"}`, i, dots, i)
			fmt.Fprintf(&src, `"%s%d":{}`, dots, i)
		}
		for i := range 20 * n {
			fmt.Fprintf(&src, `,"z%d":{}`, i)
		}
		return []byte(model(self.String()+"}", src.String()+"}"))
	}, 200},
}

// TestReviewMapMemoryLinear: Map allocates within a small multiple of what
// parsing the same model allocates, whatever the model's shape.
func TestReviewMapMemoryLinear(t *testing.T) {
	for _, tt := range hostileModels {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.model(tt.n)
			parse := allocated(func() { _, _ = canonical.Parse(m) })
			var err error
			mapping := allocated(func() { _, err = Map(m, SelectLowestRef) })
			t.Logf("%d bytes: parse allocates %d, Map %d (x%.1f): %v", len(m), parse, mapping, float64(mapping)/float64(parse), err)
			require.LessOrEqual(t, mapping, 4*parse, "Map allocates more than 4 times what parsing does")
		})
	}
}

// BenchmarkMapHostile reports Map's time on the hostile models against
// parsing them (x_parse; target ≤ 2).
func BenchmarkMapHostile(b *testing.B) {
	for _, tt := range hostileModels {
		b.Run(tt.name, func(b *testing.B) {
			m := tt.model(tt.n)
			var parse, mapping float64
			for range b.N {
				parse += timed(func() { _, _ = canonical.Parse(m) })
				mapping += timed(func() { _, _ = Map(m, SelectLowestRef) })
			}
			b.ReportMetric(mapping/parse, "x_parse")
		})
	}
}

func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func timed(fn func()) float64 {
	start := time.Now()
	fn()
	return float64(time.Since(start))
}

// TestReviewValuesEmptyRef: an entry of values whose name is empty is not a
// source ref (SPEC.md §12.4: values is an object of such entries as
// $source, a non-empty string), so the scan is incomplete, as an empty
// $source makes it — not a record error.
func TestReviewValuesEmptyRef(t *testing.T) {
	for _, live := range []string{"0", "null"} {
		m := model(`{"p":`+leaf("1", "n2k.160", `"values":{"":{"value":`+live+`},"n2k.160":{"value":1}}`)+`}`, twoBuses)
		rs, err := Map([]byte(m), SelectLowestRef)
		require.Nil(t, rs)
		requireScanError(t, err, ReasonModel)
	}
}

// TestReviewErrorTextBounded: an error text quotes a bounded part of what
// the server sent — its status line, the endpoints of its discovery
// document — however long that is.
func TestReviewErrorTextBounded(t *testing.T) {
	long := "/" + strings.Repeat("x", 60<<10)
	tests := []struct {
		name  string
		setup func(f *fakeServer)
	}{
		{"a long endpoint answering 404", func(f *fakeServer) {
			f.discovery = func(base string) string {
				return `{"endpoints":{"v1":{"signalk-http":"` + base + long + `","signalk-ws":"` + strings.Replace(base, "http", "ws", 1) + `/signalk/v1/stream"}}}`
			}
		}},
		{"a long stream endpoint answering 404", func(f *fakeServer) {
			f.discovery = func(base string) string {
				return `{"endpoints":{"v1":{"signalk-http":"` + base + `/signalk/v1/api/","signalk-ws":"` + strings.Replace(base, "http", "ws", 1) + long + `"}}}`
			}
		}},
		{"a long endpoint that hangs up", func(f *fakeServer) {
			f.discovery = func(base string) string {
				return `{"endpoints":{"v1":{"signalk-http":"` + base + `/signalk/v1/api/` + long[1:] + `","signalk-ws":"` + strings.Replace(base, "http", "ws", 1) + `/signalk/v1/stream"}}}`
			}
			f.api = func(w http.ResponseWriter, r *http.Request) {
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
			}
		}},
		{"a long status line", func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				writeStatus(buf, "HTTP/1.1 500 "+strings.Repeat("y", 1<<20))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, false)
			f.set(tt.setup)
			_, err := newClient(t, f).Discover(t.Context())
			require.Error(t, err)
			require.Equal(t, sourcecatalog.ErrIncompleteScan, sourcecatalog.Class(err))
			require.LessOrEqual(t, len(err.Error()), 1024, "the error quotes %d bytes: %.300s…", len(err.Error()), err.Error())
		})
	}
}

func writeStatus(w *bufio.ReadWriter, status string) {
	w.WriteString(status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	w.Flush()
}

// TestReviewEmptyNameAtTheTop: a member of the vessel named "" is a path
// segment like any other, so a path under it begins with an empty segment
// and breaks §4.1's rule; it is neither renamed to the path without it nor
// mapped twice beside a sibling of that name.
func TestReviewEmptyNameAtTheTop(t *testing.T) {
	for _, self := range []string{
		`{"":{"p":` + leaf("1", "n2k.160", "") + `}}`,
		`{"":{"p":` + leaf("1", "n2k.160", "") + `},"p":` + leaf("2", "n2k.115", "") + `}`,
	} {
		rs, err := Map([]byte(model(self, twoBuses)), SelectLowestRef)
		require.Nil(t, rs, "%s", canonicalRecords(rs))
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
		require.Equal(t, sourcecatalog.ErrInvalidValue, sourcecatalog.Class(err))
	}
}

// TestReviewRefWithEmptyKey: a ref ending in a dot names the device of
// that bus keyed "" or whose n2k.canName is "" (SPEC.md §12.5); a device
// without a CAN name is not one, so such a ref matches nothing.
func TestReviewRefWithEmptyKey(t *testing.T) {
	m := model(`{"p":`+leaf("1", "n2k.", "")+`}`, `{"n2k":{"label":"n2k","160":{"n2k":{"src":"160"}}}}`)
	rs, err := Map([]byte(m), SelectLowestRef)
	require.Nil(t, rs, "%s", canonicalRecords(rs))
	requireScanError(t, err, ReasonSource)

	m = model(`{"p":`+leaf("1", "n2k.", "")+`}`, `{"n2k":{"label":"n2k","160":{"n2k":{"src":"160","canName":""}}}}`)
	rs, err = Map([]byte(m), SelectLowestRef)
	require.NoError(t, err)
	require.Contains(t, canonicalRecords(rs), `"source_ref":"n2k."`)
}

// FuzzMap: Map never panics, and returns records or an error, never both;
// records it returns are a valid snapshot's content.
func FuzzMap(f *testing.F) {
	for _, self := range []string{
		`{"":{"p":` + leaf("1", "n2k.", "") + `}}`,
		`{"a":{"b":` + leaf(`{"latitude":1,"longitude":2,"altitude":null}`, "n2k.115", `"meta":{"units":"m"},"values":{"0183.GP":{"value":1},"n2k.115":{"value":null}}`) + `}}`,
		`{"x":` + leaf(`"s"`, "n2k.c07991002fb0c980", "") + `,"y":` + leaf("1", "defaults", "") + `}`,
	} {
		f.Add([]byte(model(self, twoBuses)))
	}
	f.Fuzz(func(t *testing.T, m []byte) {
		rs, err := Map(m, SelectLowestRef)
		if err != nil {
			require.Nil(t, rs)
			require.NotNil(t, sourcecatalog.Class(err), "%v", err)
			return
		}
		if len(rs) > 0 {
			require.NoError(t, catalog.Check(rs))
		}
	})
}

// TestReviewOneDeviceTwoWays: a device keyed by the same name as its CAN
// name is one entry, matched once (SPEC.md §12.5).
func TestReviewOneDeviceTwoWays(t *testing.T) {
	m := model(`{"p":`+leaf("1", "n.c0", "")+`}`, `{"n":{"c0":{"n2k":{"canName":"c0"}}}}`)
	rs, err := Map([]byte(m), SelectLowestRef)
	require.NoError(t, err)
	require.Contains(t, canonicalRecords(rs), `"meta":{"n2k":{"canName":"c0"}},"source_ref":"n.c0"`)
}
