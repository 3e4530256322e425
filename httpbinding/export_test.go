package httpbinding

import "time"

// OnGunzip makes every gunzip of the Handler report to f how many
// decompressed bytes it took out of its decompressor, until the returned
// function is called. Tests that set it do not run in parallel.
func OnGunzip(f func(n int)) (restore func()) {
	gunzipped.Store(&f)
	return func() { gunzipped.Store(nil) }
}

// SetGateClock makes g measure a declaration's validity on now.
func SetGateClock(g *Gate, now func() time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now = now
}
