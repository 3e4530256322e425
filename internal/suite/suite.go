// Package suite holds what the conformance suites finalizetest and
// outboxtest share: named groups of test cases run against a store maker,
// and the running of functions at once.
package suite

import (
	"slices"
	"sync"
	"testing"
)

// A Case is one test of a suite, run against stores that S makes. Case
// and Group are aliases of struct types so that the suites may list them
// unkeyed, as {"Name", testName}.
type Case[S any] = struct {
	Name string
	Run  func(t *testing.T, newStore S)
}

// A Group is a named list of cases, run as one subtest.
type Group[S any] = struct {
	Name  string
	Cases []Case[S]
}

// Names returns the names of groups, in order.
func Names[S any](groups []Group[S]) []string {
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name
	}
	return names
}

// Run runs the named groups (all of them when none is named), each as a
// subtest with a subtest per case. An unknown name fails the test, with a
// message that starts with suite, the name of the calling package.
func Run[S any](t *testing.T, suite string, groups []Group[S], newStore S, names ...string) {
	t.Helper()
	for _, name := range names {
		if !slices.Contains(Names(groups), name) {
			t.Fatalf("%s: no group %q; groups are %v", suite, name, Names(groups))
		}
	}
	for _, g := range groups {
		if len(names) > 0 && !slices.Contains(names, g.Name) {
			continue
		}
		t.Run(g.Name, func(t *testing.T) {
			for _, c := range g.Cases {
				t.Run(c.Name, func(t *testing.T) { c.Run(t, newStore) })
			}
		})
	}
}

// Parallel runs n functions at once, released together, and returns their
// results in order.
func Parallel[T any](n int, fn func(i int) T) []T {
	out := make([]T, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			out[i] = fn(i)
		}()
	}
	start.Done()
	done.Wait()
	return out
}
