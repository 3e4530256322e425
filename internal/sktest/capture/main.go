// Command capture records the Signal K fixtures of signalk/testdata from
// real signalk-server processes run by sktest, one per scenario, all at
// once. Every body is saved as the server sent it (after the transport's
// gzip decoding), byte for byte.
//
//	go run ./internal/sktest/capture -out signalk/testdata
//
// It needs SOURCECATALOG_SIGNALK_SERVER (scripts/signalk.sh, sk_install)
// and takes about two minutes: the tree of a server is taken once it has
// played its feeds for -settle.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/yachtmemory/sourcecatalog/internal/sktest"
)

func main() {
	out := flag.String("out", "signalk/testdata", "directory the fixtures are written to")
	exe := flag.String("server", os.Getenv(sktest.ServerEnv), "signalk-server executable")
	settle := flag.Duration("settle", 75*time.Second, "how long each server plays its feeds, from its first answer, before its tree is taken")
	only := flag.String("only", "", "run only the scenarios named here (comma-separated), e.g. both,priorities")
	parallel := flag.Int("parallel", 2, "how many servers run at once")
	flag.Parse()
	if *exe == "" {
		log.Fatalf("no signalk-server: set %s or -server", sktest.ServerEnv)
	}
	tmp, err := os.MkdirTemp("", "sktest-capture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	c := &capturer{exe: *exe, out: *out, tmp: tmp, settle: *settle}
	scenarios := []struct {
		name string
		opts sktest.Options
		run  func(*capturer, *sktest.Server, time.Time) error
	}{
		{"both", sktest.Options{}, (*capturer).both},
		{"n2k", sktest.Options{Feeds: sktest.FeedN2K}, settled("full-n2k.json")},
		{"n2k-noidentity", sktest.Options{Feeds: sktest.FeedN2K, NoIdentity: true}, settled("full-n2k-noidentity.json")},
		{"0183", sktest.Options{Feeds: sktest.Feed0183}, settled("full-0183.json")},
		{"n2k-filetimestamps", sktest.Options{Feeds: sktest.FeedN2K, FileTimestamps: true}, settled("full-n2k-filetimestamps.json")},
		{"priorities", sktest.Options{Priorities: true}, (*capturer).priorities},
		{"usecanname", sktest.Options{UseCanName: true}, settled("full-usecanname.json")},
		{"security", sktest.Options{Security: true, Feeds: sktest.FeedN2K}, (*capturer).security},
	}
	var wg sync.WaitGroup
	errs := make([]error, len(scenarios))
	slots := make(chan struct{}, max(*parallel, 1))
	for i, sc := range scenarios {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), sc.name) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			dir := filepath.Join(tmp, sc.name)
			if err := os.Mkdir(dir, 0o700); err != nil {
				errs[i] = err
				return
			}
			s, err := sktest.Launch(c.exe, dir, sc.opts)
			if s != nil {
				defer s.Close()
			}
			if err == nil {
				err = sc.run(c, s, time.Now())
			}
			if err != nil {
				tail := ""
				if s != nil {
					tail = "\n" + s.LogTail(30)
				}
				errs[i] = fmt.Errorf("%s: %w%s", sc.name, err, tail)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		log.Fatal(err)
	}
}

type capturer struct {
	exe, out, tmp string
	settle        time.Duration
}

func (c *capturer) save(name string, b []byte) error {
	log.Printf("%s: %d bytes", name, len(b))
	return os.WriteFile(filepath.Join(c.out, name), b, 0o644)
}

func (c *capturer) get(s *sktest.Server, path, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := s.Get(ctx, path)
	if err != nil {
		return nil, err
	}
	return b, c.save(name, b)
}

// wait sleeps until c.settle after start, when the server first answered
// (it starts its feeds just before).
func (c *capturer) wait(start time.Time) { time.Sleep(time.Until(start.Add(c.settle))) }

func settled(name string) func(*capturer, *sktest.Server, time.Time) error {
	return func(c *capturer, s *sktest.Server, start time.Time) error {
		c.wait(start)
		_, err := c.get(s, "/signalk/v1/api/", name)
		return err
	}
}

// both takes the early tree, the discovery document and the hello right
// after the start, then two settled trees in which the $source of a path
// that both feeds write differs.
func (c *capturer) both(s *sktest.Server, start time.Time) error {
	if _, err := c.get(s, "/signalk/v1/api/", "full-early.json"); err != nil {
		return err
	}
	if _, err := c.get(s, "/signalk", "discovery.json"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hello, err := s.Hello(ctx)
	if err != nil {
		return err
	}
	if err := c.save("ws-hello.json", hello); err != nil {
		return err
	}
	cancel()
	c.wait(start)
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := c.get(s, "/signalk/v1/api/", "full-both-nopriority-1.json")
	if err != nil {
		return err
	}
	second, err := firstChange(ctx, s, first, 100)
	if err != nil {
		return err
	}
	if second == nil {
		return errors.New("the $source of the shared paths did not change in 100 reads")
	}
	return c.save("full-both-nopriority-2.json", second)
}

// firstChange reads the full model of s up to n times, 200 ms apart, and
// returns the first whose shared paths' $source differ from those of
// first, or nil if none did.
func firstChange(ctx context.Context, s *sktest.Server, first []byte, n int) ([]byte, error) {
	want, err := selectedSources(first)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		time.Sleep(200 * time.Millisecond)
		b, err := s.Get(ctx, "/signalk/v1/api/")
		if err != nil {
			return nil, err
		}
		got, err := selectedSources(b)
		if err != nil {
			return nil, err
		}
		if got != want {
			return b, nil
		}
	}
	return nil, nil
}

// priorities takes a settled tree of a server with priorities and checks
// that a second read a few seconds later selects the same sources.
func (c *capturer) priorities(s *sktest.Server, start time.Time) error {
	c.wait(start)
	b, err := c.get(s, "/signalk/v1/api/", "full-both-priority.json")
	if err != nil {
		return err
	}
	want, err := selectedSources(b)
	if err != nil {
		return err
	}
	if strings.Contains(want, "="+sktest.Label0183+".") {
		return fmt.Errorf("with priorities an NMEA 0183 source is selected:\n%s", want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	changed, err := firstChange(ctx, s, b, 20)
	if err != nil {
		return err
	}
	if changed != nil {
		got, _ := selectedSources(changed)
		return fmt.Errorf("with priorities the selection changed:\n%s\n%s", want, got)
	}
	prio, err := sktest.Priorities(false)
	if err != nil {
		return err
	}
	return c.save("priorities.json", mustJSON(prio))
}

// security records what a secured server answers without a token and with
// one.
func (c *capturer) security(s *sktest.Server, start time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range []struct{ path, name string }{
		{"/signalk", "secured-discovery"},
		{"/signalk/v1/api/", "secured-api-notoken"},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+p.path, nil)
		if err != nil {
			return err
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		head := fmt.Sprintf("%s %s\nContent-Type: %s\n\n", resp.Proto, resp.Status, resp.Header.Get("Content-Type"))
		if err := c.save(p.name+".txt", append([]byte(head), buf.Bytes()...)); err != nil {
			return err
		}
	}
	c.wait(start)
	_, err := c.get(s, "/signalk/v1/api/", "secured-full-n2k.json")
	return err
}

// selectedSources lists "path=$source" for the shared paths of a full
// model.
func selectedSources(full []byte) (string, error) {
	var doc struct {
		Self    string                     `json:"self"`
		Vessels map[string]json.RawMessage `json:"vessels"`
	}
	if err := json.Unmarshal(full, &doc); err != nil {
		return "", err
	}
	var self map[string]any
	if err := json.Unmarshal(doc.Vessels[strings.TrimPrefix(doc.Self, "vessels.")], &self); err != nil {
		return "", fmt.Errorf("self %q: %w", doc.Self, err)
	}
	var out []string
	for _, p := range sktest.SharedPaths {
		var node any = self
		for _, k := range strings.Split(p, ".") {
			m, _ := node.(map[string]any)
			node = m[k]
		}
		m, _ := node.(map[string]any)
		out = append(out, fmt.Sprintf("%s=%v", p, m["$source"]))
	}
	sort.Strings(out)
	return strings.Join(out, "\n"), nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
