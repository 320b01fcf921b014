package authproxy

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConnectionCap: connections over the cap get a 503 naming it and are
// counted with one warning; a closed connection frees its place.
func TestConnectionCap(t *testing.T) {
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	p := startProxy(t, allRoutes(t, up), func(c *Config) { c.MaxConns = 2 })
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The two are accepted (and counted) before the next ones are.
	for deadline := time.Now().Add(5 * time.Second); p.clients.Open() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections under the cap accepted, want 2", p.clients.Open())
		}
	}
	for range 2 {
		resp, body := raw(t, p.addr, "GET /anthropic/v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "cap of 2 connections") {
			t.Fatalf("over the cap: %s %q, want 503 naming the cap", resp.Status, body)
		}
	}
	if n, max := p.Refused(); n != 2 || max != 2 {
		t.Errorf("Refused() = %d, %d; want 2 over a cap of 2", n, max)
	}
	var warnings int
	for _, e := range p.audit.all() {
		if e.name == EventWarning {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings, want one for all refusals", warnings)
	}
	held[0].Close()
	for deadline := time.Now().Add(5 * time.Second); p.clients.Open() == 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection still holds its place under the cap")
		}
	}
	if resp, _ := raw(t, p.addr, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("after a connection closed: %s", resp.Status)
	}
	held[1].Close()
}
