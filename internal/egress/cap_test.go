package egress

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConnectionCap: the HTTP and SOCKS5 listeners share one cap; a client
// over it gets its protocol's refusal, the refusals are counted with one
// warning, and a closed tunnel frees its place.
func TestConnectionCap(t *testing.T) {
	echo := startEcho(t)
	f := startFakeDNS(t, nil)
	a := &auditLog{}
	p := New(Config{Session: "s1", Rules: mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil),
		Resolver: f.resolver(t), Audit: a.record, MaxConns: 3})
	httpAddr := listen(t, p, p.ServeHTTPProxy)
	socksAddr := listen(t, p, p.ServeSOCKS5)
	_, portStr, _ := net.SplitHostPort(echo)
	port, _ := strconv.Atoi(portStr)
	ipReq := append([]byte{5, 1, 0, 1, 127, 0, 0, 1}, byte(port>>8), byte(port))

	var tunnels []net.Conn
	for range 2 {
		resp, c, _ := connect(t, httpAddr, echo)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT under the cap: %s", resp.Status)
		}
		tunnels = append(tunnels, c)
	}
	if reply, c := socksConnect(t, socksAddr, ipReq); reply != repSucceeded {
		t.Fatalf("SOCKS5 under the cap: reply %d", reply)
	} else {
		tunnels = append(tunnels, c)
	}

	resp, c, br := connect(t, httpAddr, echo)
	body, _ := io.ReadAll(br)
	c.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "session s1") || !strings.Contains(string(body), "cap of 3 connections") {
		t.Errorf("CONNECT over the cap: %s %q, want 503 naming the session and the cap", resp.Status, body)
	}
	if reply, _ := socksConnect(t, socksAddr, ipReq); reply != repGeneralFailure {
		t.Errorf("SOCKS5 over the cap: reply %d, want %d (general failure)", reply, repGeneralFailure)
	}
	if n, max := p.Refused(); n != 2 || max != 3 {
		t.Errorf("Refused() = %d, %d; want 2 refused over a cap of 3", n, max)
	}
	if w := a.find(EventWarning); len(w) != 1 || !strings.Contains(w[0].fields["message"].(string), "3 connections open") {
		t.Errorf("warnings %v, want one naming the cap", w)
	}

	tunnels[0].Close()
	// The server's side of the tunnel closes when it reads the EOF.
	for deadline := time.Now().Add(5 * time.Second); p.clients.Open() == 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a closed tunnel still holds its place under the cap")
		}
	}
	if resp, c, _ := connect(t, httpAddr, echo); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a tunnel closed, CONNECT %s, want 200", resp.Status)
	} else {
		c.Close()
	}
	for _, c := range tunnels[1:] {
		c.Close()
	}
}
