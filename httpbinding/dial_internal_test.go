package httpbinding

import (
	"testing"
	"time"
)

// Over plain http the dialer connects only to loopback addresses, so a
// localhost resolved elsewhere is refused before connecting.
func TestPlainDialerLoopbackOnly(t *testing.T) {
	d := dialer(time.Second, true)
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "127.9.9.9:1": true, "[::1]:8080": true, "[::ffff:127.0.0.1]:80": true,
		"10.0.0.1:80": false, "[2001:db8::1]:80": false, "0.0.0.0:80": false, "[::]:80": false, "localhost:80": false,
	} {
		if err := d.Control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("Control(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
	if dialer(time.Second, false).Control != nil {
		t.Error("the https dialer restricts addresses")
	}
}
