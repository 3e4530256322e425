//go:build race

package sqlitestore_test

// raceEnabled reports a build with the race detector, under which every
// SQLite connection costs some ten times as much to open.
const raceEnabled = true
