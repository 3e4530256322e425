package signalk

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// DiscoverStart names the start both hellos of the scan read, and none
// for a scan across a restart.
func TestDiscoverStart(t *testing.T) {
	f := newFakeServer(t, false)
	f.startIDs = []string{"start-1"}
	c := newClient(t, f, WithSettle(0))
	rs, start, err := c.DiscoverStart(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	require.Equal(t, "start-1", start)

	f.set(func(f *fakeServer) { f.startIDs = []string{"start-2", "start-3"}; f.hellos = 0 })
	rs, start, err = c.DiscoverStart(t.Context())
	requireScanError(t, err, ReasonRestarted)
	require.Empty(t, start)
	require.Nil(t, rs)
}
