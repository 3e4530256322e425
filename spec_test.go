package sourcecatalog_test

// SPEC.md and the golden vectors cite each other (SPEC.md §1.2): a
// requirement names the vectors that exercise it, and a vector names, in its
// spec: header, the section it exercises. The tests here keep both sides
// honest.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const specFile = "SPEC.md"

// A specSection is one numbered section of SPEC.md: its heading's number
// and the text up to the next heading.
type specSection struct {
	number string
	line   int // of the heading, 1-based
	text   string
}

// A specDoc is SPEC.md read into sections, in document order.
type specDoc struct {
	sections []specSection
	byNumber map[string]*specSection
	lines    []string
}

var (
	headingLine = regexp.MustCompile(`^(#{2,3}) (\S+) `)
	// Level two: "## 6. Messages"; level three: "### 6.2 Manifest".
	sectionHeading = map[int]*regexp.Regexp{
		2: regexp.MustCompile(`^([1-9][0-9]*)\.$`),
		3: regexp.MustCompile(`^([1-9][0-9]*\.[1-9][0-9]*)$`),
	}
	sectionRef   = regexp.MustCompile(`§([0-9]+(?:\.[0-9]+)?)`)
	citation     = regexp.MustCompile(`\[vectors: ([^\]]*)\]`)
	citationOpen = regexp.MustCompile(`\[vectors\b`)
	citedID      = regexp.MustCompile(`^([0-9]{3})(?:[–-]([0-9]{3}))?$`)
	untested     = regexp.MustCompile(`\[not vector-tested: [^\]]+\]`)
	requirement  = regexp.MustCompile(`\b(MUST|SHALL|REQUIRED)\b`)
	listItem     = regexp.MustCompile(`^\s*(- |[0-9]+\. |\|)`)
)

func readSpec(t *testing.T) *specDoc {
	t.Helper()
	data, err := os.ReadFile(specFile)
	require.NoError(t, err)
	doc := &specDoc{byNumber: map[string]*specSection{}, lines: strings.Split(string(data), "\n")}
	var cur *specSection
	fenced := false
	for i, line := range doc.lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if m := headingLine.FindStringSubmatch(line); m != nil && !fenced {
			n := sectionHeading[len(m[1])].FindStringSubmatch(m[2])
			require.NotNil(t, n, "%s:%d: a heading of level %d is numbered like %q", specFile, i+1, len(m[1]),
				map[int]string{2: "6.", 3: "6.2"}[len(m[1])])
			doc.sections = append(doc.sections, specSection{number: n[1], line: i + 1})
			cur = &doc.sections[len(doc.sections)-1]
			continue
		}
		if cur != nil {
			cur.text += line + "\n"
		}
	}
	for i := range doc.sections {
		s := &doc.sections[i]
		require.Nil(t, doc.byNumber[s.number], "%s:%d: section %s is numbered twice", specFile, s.line, s.number)
		doc.byNumber[s.number] = s
	}
	return doc
}

// parseCitations returns the vector numbers a text cites, or an error for a
// citation that is not `[vectors: NNN, NNN–NNN, ...]`.
func parseCitations(text string) ([]string, error) {
	if got, want := len(citationOpen.FindAllString(text, -1)), len(citation.FindAllString(text, -1)); got != want {
		return nil, fmt.Errorf("%d of %d vector citations are not [vectors: NNN, ...]", got-want, got)
	}
	var ids []string
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		// A citation may wrap across lines: a line break counts as a space.
		for _, item := range strings.Split(strings.Join(strings.Fields(m[1]), " "), ", ") {
			r := citedID.FindStringSubmatch(item)
			if r == nil {
				return nil, fmt.Errorf("citation %q: %q is not NNN or NNN–NNN", m[0], item)
			}
			lo, _ := strconv.Atoi(r[1])
			hi := lo
			if r[2] != "" {
				hi, _ = strconv.Atoi(r[2])
			}
			if hi < lo {
				return nil, fmt.Errorf("citation %q: range %q runs backwards", m[0], item)
			}
			for n := lo; n <= hi; n++ {
				ids = append(ids, fmt.Sprintf("%03d", n))
			}
		}
	}
	return ids, nil
}

// TestSpecSections checks the numbering of SPEC.md: level-two sections
// 1, 2, 3, ... and, under each, level-three sections N.1, N.2, ... with no
// gaps, so that a number once given is easy to keep stable.
func TestSpecSections(t *testing.T) {
	doc := readSpec(t)
	require.NotEmpty(t, doc.sections)
	top, sub := 0, 0
	for _, s := range doc.sections {
		parts := strings.Split(s.number, ".")
		if len(parts) == 1 {
			top++
			sub = 0
			assert.Equal(t, strconv.Itoa(top), s.number, "%s:%d: sections are numbered in order", specFile, s.line)
			continue
		}
		sub++
		assert.Equal(t, fmt.Sprintf("%d.%d", top, sub), s.number, "%s:%d: subsections are numbered in order under their section", specFile, s.line)
	}
}

// TestSpecReferences checks that every §N or §N.M in SPEC.md names a
// section that exists.
func TestSpecReferences(t *testing.T) {
	doc := readSpec(t)
	for i, line := range doc.lines {
		for _, m := range sectionRef.FindAllStringSubmatch(line, -1) {
			assert.Contains(t, doc.byNumber, m[1], "%s:%d: §%s names no section", specFile, i+1, m[1])
		}
	}
}

// TestSpecVectorSections checks that SPEC.md cites only vectors that exist,
// that every vector names a section that exists, and that this section
// cites the vector.
func TestSpecVectorSections(t *testing.T) {
	doc := readSpec(t)
	vectorsByID := map[string]*golden{}
	for _, g := range loadGoldens(t) {
		id := g.file[:3]
		require.Nil(t, vectorsByID[id], "two vectors numbered %s", id)
		vectorsByID[id] = g
	}
	cited := map[string]map[string]bool{} // section -> vector ids it cites
	for _, s := range doc.sections {
		ids, err := parseCitations(s.text)
		require.NoError(t, err, "%s §%s", specFile, s.number)
		cited[s.number] = map[string]bool{}
		for _, id := range ids {
			cited[s.number][id] = true
			assert.Contains(t, vectorsByID, id, "%s §%s cites vector %s, which does not exist", specFile, s.number, id)
		}
	}
	for id, g := range vectorsByID {
		if _, ok := doc.byNumber[g.spec]; !ok {
			t.Errorf("%s: spec: %s names no section of %s", g.file, g.spec, specFile)
			continue
		}
		assert.True(t, cited[g.spec][id], "%s: spec: %s, but %s §%s does not cite vector %s", g.file, g.spec, specFile, g.spec, id)
	}
}

// TestSpecRequirementsCited checks that every requirement of SPEC.md — a
// paragraph, list item or table row saying MUST, SHALL or REQUIRED — cites
// vectors or says why it is not vector-tested. Section 1, which defines the
// key words and the citations, is exempt.
func TestSpecRequirementsCited(t *testing.T) {
	doc := readSpec(t)
	check := func(block string, line int) {
		if block == "" || !requirement.MatchString(block) {
			return
		}
		if !citation.MatchString(block) && !untested.MatchString(block) {
			text := block
			if len(text) > 120 {
				text = text[:120] + "…"
			}
			t.Errorf("%s:%d: a requirement cites no vector and is not marked [not vector-tested: ...]: %s", specFile, line, text)
		}
	}
	for _, s := range doc.sections {
		if strings.HasPrefix(s.number, "1.") || s.number == "1" {
			continue
		}
		var block string
		start := 0
		fenced := false
		for k, line := range strings.Split(s.text, "\n") {
			n := s.line + 1 + k
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
				check(block, start)
				block = ""
				continue
			}
			if fenced {
				continue
			}
			if strings.TrimSpace(line) == "" || listItem.MatchString(line) {
				check(block, start)
				block, start = "", n
			}
			if strings.TrimSpace(line) != "" {
				if block == "" {
					start = n
				}
				block += line + "\n"
			}
		}
		check(block, start)
	}
}

// TestSpecCitationParser checks the citation syntax the tests above rely on.
func TestSpecCitationParser(t *testing.T) {
	ids, err := parseCitations("see [vectors: 073, 092] and [vectors: 019–021,\n005-006]")
	require.NoError(t, err)
	assert.Equal(t, []string{"073", "092", "019", "020", "021", "005", "006"}, ids)
	for _, bad := range []string{"[vectors: 73]", "[vectors: 073,092]", "[vectors: 073 092]", "[vectors 073]", "[vectors: 021–019]", "[vectors: ]"} {
		_, err := parseCitations(bad)
		assert.Error(t, err, bad)
	}
}
