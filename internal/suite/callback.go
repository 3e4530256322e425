package suite

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// callbackError is an error of the callback's own type, which a Store
// must not turn into another.
type callbackError struct{ n int }

func (e *callbackError) Error() string { return fmt.Sprintf("callback failed (%d)", e.n) }

// RunCallbackErrors checks the rule both Store contracts share: WithVessel
// returns the very error its callback returned, not a wrapper of it. For
// each of four failures — a sentinel, a wrapped sentinel, an error of the
// callback's own type, a context error — it runs a subtest in which
// withVessel runs one transaction whose callback makes the successful Tx
// call calls[i] and then returns the failure; withVessel returns what
// WithVessel returned, which must be the failure itself, compared with ==.
// contract names the Store contract in messages ("outbox.Store").
func RunCallbackErrors(t *testing.T, contract string, calls [4]string, withVessel func(t *testing.T, call string, fail error) error) {
	sentinel := errors.New("callback failed")
	for i, c := range []struct {
		name string
		err  error
	}{
		{"Sentinel", sentinel},
		{"Wrapped", fmt.Errorf("caller: %w", sentinel)},
		{"OwnTypeAfterWrite", &callbackError{1}},
		{"ContextError", context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := withVessel(t, calls[i], c.err)
			require.Truef(t, err == c.err,
				"WithVessel must return the callback's error unchanged, compared with == (%s contract): the callback returned %#v, WithVessel %#v", contract, c.err, err)
		})
	}
}
