package agent

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

// The causes the log names (its "cause" attribute), each with the next
// attempt ("retry_in").
const (
	// CauseReceiverUnreachable: no answer from the receiver — a refused
	// or cut connection, a name that does not resolve, a time-out.
	CauseReceiverUnreachable = "receiver unreachable"
	// CauseReceiverRefused: the receiver answered, refusing — a
	// refusal, an answer the binding does not take, TLS verification or
	// credentials that failed.
	CauseReceiverRefused = "receiver refused"
	// CauseStoreUnavailable: the on-board store could not serve.
	CauseStoreUnavailable = "store unavailable"
	// CauseSignalKUnreachable: a request to the Signal K server failed or
	// was answered other than 2xx.
	CauseSignalKUnreachable = "Signal K unreachable"
	// CauseNotSettled: the server's start is not settled yet, or it
	// restarted during the scan (SPEC.md §12.7).
	CauseNotSettled = "Signal K not settled"
	// CauseScanIncomplete: the server answered something the mapping
	// cannot trust (SPEC.md §12.6).
	CauseScanIncomplete = "Signal K scan incomplete"
	// CauseHeld: a scan with no paths, or a selection that shrank
	// sharply, waits for a later scan to confirm it (SPEC.md §12.7).
	CauseHeld = "scan held"
	// CauseScanRefused: the records break a rule of the library (a
	// limit, a record rule).
	CauseScanRefused = "scan refused"
)

// scanCause names why a scan failed, and the wait before the next one
// that the error itself says: a positive RetryAfter(), or ConfirmGap for
// a server that restarted during the scan or has not settled; 0 when
// waiting does not help by itself.
func scanCause(err error) (cause string, wait time.Duration) {
	var se *signalk.ScanError
	var un *Unconfirmed
	switch {
	case errors.As(err, &un):
		return un.Cause, un.Wait
	case errors.As(err, &se) && (se.Reason == signalk.ReasonSettling || se.Reason == signalk.ReasonRestarted):
		wait, ok := retryAfter(err)
		if !ok {
			wait = ConfirmGap
		}
		return CauseNotSettled, wait
	case errors.As(err, &se) && se.Reason == signalk.ReasonRequest:
		return CauseSignalKUnreachable, 0
	case errors.Is(err, sourcecatalog.ErrIncompleteScan):
		wait, _ := retryAfter(err)
		if wait > 0 {
			return CauseNotSettled, wait
		}
		return CauseScanIncomplete, 0
	}
	return CauseScanRefused, 0
}

// sendCause names why publishing failed: the receiver unreachable or
// refusing, or the outbox store. An error with no answer from the
// network is "unreachable"; a refusal, an answer the binding refuses, a
// TLS failure or one needing an operator "refused"; another store
// unavailable error is the outbox's.
func sendCause(err error) string {
	var ne net.Error
	var tlsErr *httpbinding.TLSError
	text := ""
	if err != nil {
		text = err.Error()
	}
	switch {
	case err == nil:
		return ""
	case errors.As(err, &tlsErr) || outbox.NeedsOperator(err) || errors.Is(err, outbox.ErrCapabilityOff):
		return CauseReceiverRefused
	case errors.As(err, &ne):
		return CauseReceiverUnreachable
	case strings.Contains(text, "refused by the receiver") || strings.Contains(text, "httpbinding: answer"):
		return CauseReceiverRefused
	case errors.Is(err, sourcecatalog.ErrStoreUnavailable) && strings.Contains(text, "httpbinding"):
		return CauseReceiverUnreachable
	case errors.Is(err, sourcecatalog.ErrStoreUnavailable):
		return CauseStoreUnavailable
	}
	return CauseReceiverRefused
}
