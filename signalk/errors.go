package signalk

import (
	"strings"
	"time"

	"github.com/yachtmemory/sourcecatalog"
)

// A Reason says why a scan cannot be trusted.
type Reason string

// The reasons of a ScanError.
const (
	// ReasonRequest: the server could not be reached, answered with a
	// status other than 2xx, or the scan's time bound passed.
	ReasonRequest Reason = "request"
	// ReasonBody: the response body was cut short, or is larger than the
	// client's bound.
	ReasonBody Reason = "body"
	// ReasonJSON: the response is not strict JSON (SPEC.md §3.4), or
	// nests deeper than 64 levels.
	ReasonJSON Reason = "json"
	// ReasonModel: the response is JSON but not a Signal K document the
	// mapping can read: a member of the wrong type, a discovery document
	// without the v1 endpoints, an endpoint of another origin.
	ReasonModel Reason = "model"
	// ReasonSelf: the model's self does not name one of its vessels.
	ReasonSelf Reason = "self"
	// ReasonSource: an observation's $source is not listed in the
	// model's sources tree, or matches it in more than one way.
	ReasonSource Reason = "source"
	// ReasonSettling: the server started less than the settle time ago,
	// so its tree may not be whole yet; RetryAfter says when it will have
	// settled.
	ReasonSettling Reason = "settling"
	// ReasonRestarted: the server restarted while the scan read it.
	ReasonRestarted Reason = "restarted"
)

// A ScanError reports a discovery scan that cannot be trusted: nothing may
// be committed from it (SPEC.md §12.6). It wraps
// sourcecatalog.ErrIncompleteScan and, when there is one, the cause.
//
// Where locates the problem: a Signal K path, a source ref, or the URL
// that was read. Its text never quotes more than a bounded part of the
// server's answer.
type ScanError struct {
	Reason Reason
	Where  string
	Detail string
	Err    error
	// Retry is how long until a scan may succeed, for ReasonSettling and
	// ReasonRestarted; zero otherwise.
	Retry time.Duration
}

func (e *ScanError) Error() string {
	var b strings.Builder
	b.WriteString("signalk: incomplete scan")
	if e.Where != "" {
		b.WriteString(" at ")
		b.WriteString(e.Where)
	}
	b.WriteString(": ")
	b.WriteString(e.Detail)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns sourcecatalog.ErrIncompleteScan and the cause, if any.
func (e *ScanError) Unwrap() []error {
	if e.Err == nil {
		return []error{sourcecatalog.ErrIncompleteScan}
	}
	return []error{sourcecatalog.ErrIncompleteScan, e.Err}
}

// RetryAfter returns how long to wait before the next scan can succeed:
// the rest of the settle time after a (re)start, or zero when waiting does
// not help by itself.
func (e *ScanError) RetryAfter() time.Duration { return e.Retry }

func scanErr(r Reason, where, detail string, cause error) *ScanError {
	return &ScanError{Reason: r, Where: where, Detail: detail, Err: cause}
}
