package signalk

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An error text quotes at most maxQuoted bytes of the server's answer, cut
// at a character boundary, whatever the offset a character starts at.
func TestTruncateAtARuneBoundary(t *testing.T) {
	for pad := range 4 {
		s := strings.Repeat("a", pad) + strings.Repeat("é€𝄞", 100)
		got := truncate(s)
		quoted := strings.TrimSuffix(got, "…")
		if len(quoted) > maxQuoted || len(quoted) < maxQuoted-3 || !utf8.ValidString(got) || !strings.HasPrefix(s, quoted) {
			t.Errorf("pad %d: truncate gave %d bytes, valid %v: %q", pad, len(quoted), utf8.ValidString(got), got)
		}
		if b := truncateBytes([]byte(s)); b != got {
			t.Errorf("pad %d: truncateBytes %q, truncate %q", pad, b, got)
		}
	}
	if got := truncate("short"); got != "short" {
		t.Errorf("a short string is quoted whole: %q", got)
	}
}
