package egress

import (
	"net"
	"testing"

	"github.com/stockade-dev/stockade/internal/accept"
)

// TestTunnelSplices holds that a tunnel between a client the proxy accepted
// (under its connection cap, and as the HTTP proxy's server holds it) and
// a dialed upstream is spliced, not copied through a buffer: a wrapper that
// hides the *net.TCPConn turns the fast path off without any test failing
// otherwise.
func TestTunnelSplices(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	capped := accept.NewCap(4, func(int) {}).Listen(l, func(net.Conn) {})
	defer capped.Close()
	dialed, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	client, err := capped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// The HTTP proxy's server sees it as a clientConn (answer.go).
	wrapped := &clientConn{Conn: client}
	for _, dir := range [][2]net.Conn{{client, dialed}, {dialed, client}, {wrapped, dialed}, {dialed, wrapped}} {
		s := newSplicer(dir[0], dir[1])
		if s == nil {
			t.Fatalf("no splicer from %T to %T", dir[1], dir[0])
		}
		s.Close()
	}
	if s := newSplicer(&countingConn{Conn: dialed}, client); s != nil {
		s.Close()
		t.Error("spliced to a connection whose writes must be counted")
	}
}
