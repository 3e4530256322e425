package sktest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// These tests run three servers at once, each serving several subtests:
// starting a signalk-server takes from seconds to over a minute here.

func TestPlainServer(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Stoppable0183: true, MinSelfPaths: 30})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	t.Run("discovery names this server", func(t *testing.T) {
		var doc struct {
			Endpoints map[string]map[string]string `json:"endpoints"`
		}
		getJSON(t, ctx, s, "/signalk", &doc)
		if got, want := doc.Endpoints["v1"]["signalk-http"], s.URL()+"/signalk/v1/api/"; got != want {
			t.Errorf("signalk-http %q, want %q", got, want)
		}
	})

	t.Run("hello names the self vessel", func(t *testing.T) {
		var hello struct {
			Self          string `json:"self"`
			ServerStartID string `json:"serverStartId"`
		}
		b, err := s.Hello(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &hello); err != nil {
			t.Fatalf("hello %s: %v", b, err)
		}
		if hello.Self != "vessels."+SelfUUID || hello.ServerStartID == "" {
			t.Errorf("hello %s: want self vessels.%s and a serverStartId", b, SelfUUID)
		}
	})

	t.Run("SharedPaths are the paths both feeds write", func(t *testing.T) {
		// A path's second source appears when its slower feed first
		// writes it; wait for all of them, within a bound.
		var got []string
		for deadline := time.Now().Add(3 * time.Minute); ; {
			got = multiSourcePaths(t, ctx, s)
			if len(got) >= len(SharedPaths) || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Second)
		}
		want := make([]string, 0, len(SharedPaths))
		for _, p := range SharedPaths {
			src := sharedSources[p]
			want = append(want, fmt.Sprintf("%s: %s.%s %s.%s", p, LabelN2K, src[0], Label0183, src[1]))
		}
		if !slices.Equal(got, want) {
			t.Errorf("paths with two sources:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("Stop0183 stops the NMEA 0183 feed and Resume0183 resumes it", func(t *testing.T) {
		// The source's sentence timestamps are the last time each
		// sentence arrived: they stand still while the feed is stopped.
		s.Stop0183()
		time.Sleep(3 * time.Second) // what was in flight lands
		before := sentences(t, ctx, s)
		time.Sleep(5 * time.Second)
		if after := sentences(t, ctx, s); after != before {
			t.Errorf("NMEA 0183 sentences arrived while the feed was stopped:\n%s\nthen\n%s", before, after)
		}
		s.Resume0183()
		deadline := time.Now().Add(time.Minute)
		for sentences(t, ctx, s) == before {
			if time.Now().After(deadline) {
				t.Fatal("no NMEA 0183 sentence arrived in a minute after Resume0183")
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("Restart gives a new serverStartId on the same URL", func(t *testing.T) {
		id1, err := s.StartID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		url := s.URL()
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		id2, err := s.StartID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id1 == id2 || s.URL() != url {
			t.Errorf("serverStartId %s then %s, URL %s then %s: want a new id and the same URL", id1, id2, url, s.URL())
		}
		var self struct {
			UUID string `json:"uuid"`
		}
		getJSON(t, ctx, s, "/signalk/v1/api/vessels/self", &self)
		if self.UUID != SelfUUID {
			t.Errorf("self uuid after restart %q, want %q", self.UUID, SelfUUID)
		}
	})
}

func TestPrioritizedServer(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Priorities: true, MinSelfPaths: 30})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// With priorities, a shared path's values need not list the source
	// it ranks lower: only what passed the ranking reaches the tree.
	wantN2KSelected(t, ctx, s, func(addr string) string { return addr })
}

func TestSecuredServer(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Priorities: true, UseCanName: true, Security: true, TLS: true, MinSelfPaths: 30})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	t.Run("serves HTTPS", func(t *testing.T) {
		if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") || s.CertPool() == nil {
			t.Errorf("URL %s, pool %v: want https on 127.0.0.1 and a CA", s.URL(), s.CertPool())
		}
	})

	t.Run("refuses a request without the token", func(t *testing.T) {
		for _, tc := range []struct{ auth string }{{""}, {"Bearer " + s.Token() + "x"}} {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/signalk/v1/api/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("Authorization %q: %s, want 401", tc.auth, resp.Status)
			}
		}
	})

	// The stream is no check of the token: signalk-server 2.32.0 sends its
	// hello to a client without one too (seen with Hello's header removed).
	t.Run("the token opens the API and the stream", func(t *testing.T) {
		if _, err := s.Get(ctx, "/signalk/v1/api/"); err != nil {
			t.Error(err)
		}
		if _, err := s.StartID(ctx); err != nil {
			t.Error(err)
		}
	})

	t.Run("useCanName refs name CAN names; sources stay keyed by address", func(t *testing.T) {
		var full struct {
			Sources map[string]map[string]json.RawMessage `json:"sources"`
		}
		getJSON(t, ctx, s, "/signalk/v1/api/", &full)
		for addr := range sharedAddresses() {
			var dev struct {
				N2K struct {
					CANName string `json:"canName"`
				} `json:"n2k"`
			}
			if err := json.Unmarshal(full.Sources[LabelN2K][addr], &dev); err != nil || dev.N2K.CANName != canName(t, addr) {
				t.Errorf("sources.%s.%s: canName %q (%v), want %q", LabelN2K, addr, dev.N2K.CANName, err, canName(t, addr))
			}
		}
		refs := selected(t, ctx, s)
		hex := regexp.MustCompile(`^` + regexp.QuoteMeta(LabelN2K) + `\.[0-9a-f]{16}$`)
		for p, ref := range refs {
			if strings.HasPrefix(ref, LabelN2K+".") && !hex.MatchString(ref) {
				t.Errorf("%s: $source %q, want %s.<CAN name>", p, ref, LabelN2K)
			}
		}
	})

	t.Run("priorities by CAN name select the NMEA 2000 source of every shared path", func(t *testing.T) {
		wantN2KSelected(t, ctx, s, func(addr string) string { return canName(t, addr) })
	})
}

// wantN2KSelected checks, over ten reads in five seconds, that every
// shared path has the $source of its NMEA 2000 source, named by ref.
func wantN2KSelected(t *testing.T, ctx context.Context, s *Server, ref func(addr string) string) {
	t.Helper()
	for i := 0; i < 10; i++ {
		refs := selected(t, ctx, s)
		for _, p := range SharedPaths {
			if want := LabelN2K + "." + ref(sharedSources[p][0]); refs[p] != want {
				t.Fatalf("read %d: %s has $source %q, want %q", i, p, refs[p], want)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestCANNames(t *testing.T) {
	names, err := CANNames()
	if err != nil {
		t.Fatal(err)
	}
	// The CAN name of address 160 as signalk-server 2.32.0 rendered it
	// (signalk/testdata/full-n2k.json).
	if got := names["160"]; got != "c07991001ca18740" {
		t.Errorf("CAN name of 160: %q, want c07991001ca18740", got)
	}
	if len(names) != 4 {
		t.Errorf("%d CAN names, want 4: %v", len(names), names)
	}
}

func TestSignJWT(t *testing.T) {
	// jsonwebtoken's jwt.sign({id: "sktest", iat: 1}, "secret") with its
	// default HS256 header, as signalk-generate-token signs.
	const want = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpZCI6InNrdGVzdCIsImlhdCI6MX0.jbUq8GfYc5Ymm9vo_vCAlogWbJkMOWTedq6QivjC4XI"
	if got := signJWT("secret", `{"id":"sktest","iat":1}`); got != want {
		t.Errorf("signJWT = %s\nwant      %s", got, want)
	}
}

func TestReadTextFrame(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 300)
	tests := []struct {
		name    string
		frame   []byte
		want    []byte
		wantErr string
	}{
		{"short", append([]byte{0x81, 5}, "hello"...), []byte("hello"), ""},
		{"16-bit length", append([]byte{0x81, 126, 1, 44}, long...), long, ""},
		{"64-bit length", append([]byte{0x81, 127, 0, 0, 0, 0, 0, 0, 1, 44}, long...), long, ""},
		{"binary", []byte{0x82, 0}, nil, "want a final text frame"},
		{"fragment", []byte{0x01, 0}, nil, "want a final text frame"},
		{"masked", []byte{0x81, 0x80 | 1, 0, 0, 0, 0, 'x'}, nil, "masked"},
		{"too long", []byte{0x81, 127, 0, 0, 0, 0, 0, 0x10, 0, 1}, nil, "frame of 1048577 bytes"},
		{"cut", []byte{0x81, 5, 'h'}, nil, "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readTextFrame(bufio.NewReader(bytes.NewReader(tc.frame)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestCountLeaves(t *testing.T) {
	var tree any
	doc := `{"uuid":"x","navigation":{"position":{"value":{"latitude":1},"values":{"a":{"value":1}},"meta":{"value":3}},
		"speedOverGround":{"value":null},"log":{"meta":{"units":"m"}}},"environment":{"meta":{"value":"no leaf"}},"name":"n"}`
	if err := json.Unmarshal([]byte(doc), &tree); err != nil {
		t.Fatal(err)
	}
	if got := CountLeaves(tree); got != 2 {
		t.Errorf("CountLeaves = %d, want 2", got)
	}
}

// getJSON reads path and decodes it into v.
func getJSON(t *testing.T, ctx context.Context, s *Server, path string, v any) {
	t.Helper()
	b, err := s.Get(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// leaves returns the leaves of a self tree by path.
func leaves(tree map[string]any, prefix string, out map[string]map[string]any) {
	if _, ok := tree["value"]; ok {
		out[prefix] = tree
		return
	}
	for k, v := range tree {
		if m, ok := v.(map[string]any); ok && k != "meta" {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			leaves(m, p, out)
		}
	}
}

func selfLeaves(t *testing.T, ctx context.Context, s *Server) map[string]map[string]any {
	t.Helper()
	var self map[string]any
	getJSON(t, ctx, s, "/signalk/v1/api/vessels/self", &self)
	out := map[string]map[string]any{}
	leaves(self, "", out)
	return out
}

// multiSourcePaths lists "path: ref ref" for the self leaves with more
// than one entry in values, sorted.
func multiSourcePaths(t *testing.T, ctx context.Context, s *Server) []string {
	var out []string
	for p, leaf := range selfLeaves(t, ctx, s) {
		values, _ := leaf["values"].(map[string]any)
		if len(values) < 2 {
			continue
		}
		var refs []string
		for ref := range values {
			refs = append(refs, ref)
		}
		sort.Strings(refs)
		out = append(out, p+": "+strings.Join(refs, " "))
	}
	sort.Strings(out)
	return out
}

// selected returns the $source of every self leaf.
func selected(t *testing.T, ctx context.Context, s *Server) map[string]string {
	out := map[string]string{}
	for p, leaf := range selfLeaves(t, ctx, s) {
		ref, _ := leaf["$source"].(string)
		out[p] = ref
	}
	return out
}

// sentences returns the NMEA 0183 source's sentences and their last
// arrival times, as JSON.
func sentences(t *testing.T, ctx context.Context, s *Server) string {
	t.Helper()
	var src map[string]json.RawMessage
	getJSON(t, ctx, s, "/signalk/v1/api/sources/"+Label0183, &src)
	var parts []string
	for k, v := range src {
		if k != "label" && k != "type" {
			parts = append(parts, k+"="+string(v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

func sharedAddresses() map[string]bool {
	out := map[string]bool{}
	for _, src := range sharedSources {
		out[src[0]] = true
	}
	return out
}

func canName(t *testing.T, addr string) string {
	t.Helper()
	names, err := CANNames()
	if err != nil {
		t.Fatal(err)
	}
	return names[addr]
}
