package egress

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// TestDecideCaptured: what decides a captured connection, and what is
// dialed. A name the client sent decides and its own checked addresses are
// dialed, never the address the client chose for it; without one, the name
// the stub answered the address for decides and only that address is
// dialed; without that, the address alone.
func TestDecideCaptured(t *testing.T) {
	records := map[string][]string{
		"public.test.":  {"203.0.113.10", "203.0.113.11"},
		"other.test.":   {"203.0.113.20"},
		"private.test.": {"10.0.0.5"},
	}
	tests := []struct {
		name      string
		mode      Mode
		allow     []string
		block     []string
		answered  map[string]string // address -> the name the stub answered it for
		dst       string
		sent      string // the name in the ClientHello or Host header
		wantAllow bool
		wantRule  string
		addrs     string // what is dialed, in order (allowed)
	}{
		{name: "sent name, dst one of its addresses, first", allow: []string{"public.test"}, dst: "203.0.113.11:443", sent: "public.test",
			wantAllow: true, wantRule: "public.test", addrs: "203.0.113.11 203.0.113.10"},
		{name: "sent name, dst elsewhere: the name's addresses only", allow: []string{"public.test"}, dst: "203.0.113.99:443", sent: "public.test",
			wantAllow: true, wantRule: "public.test", addrs: "203.0.113.10 203.0.113.11"},
		{name: "sent name denied on an allowed name's address", allow: []string{"public.test"},
			answered: map[string]string{"203.0.113.10": "public.test"}, dst: "203.0.113.10:443", sent: "other.test", wantRule: "deny mode"},
		{name: "sent name denied on an address an IP rule allows", allow: []string{"203.0.113.10"}, dst: "203.0.113.10:443", sent: "other.test",
			wantRule: "deny mode"},
		{name: "sent name blocked in allow mode", mode: ModeAllow, block: []string{"other.test"}, dst: "203.0.113.20:443", sent: "other.test",
			wantRule: "other.test"},
		{name: "stub's name decides", allow: []string{"public.test:22"}, answered: map[string]string{"203.0.113.11": "public.test"}, dst: "203.0.113.11:22",
			wantAllow: true, wantRule: "public.test:22", addrs: "203.0.113.11"},
		{name: "stub's name at another port", allow: []string{"public.test:22"}, answered: map[string]string{"203.0.113.11": "public.test"}, dst: "203.0.113.11:25",
			wantRule: "deny mode"},
		{name: "stub's name blocked in allow mode", mode: ModeAllow, block: []string{"public.test"}, answered: map[string]string{"203.0.113.11": "public.test"},
			dst: "203.0.113.11:22", wantRule: "public.test"},
		{name: "stub's name, address blocked", allow: []string{"public.test"}, block: []string{"203.0.113.11"},
			answered: map[string]string{"203.0.113.11": "public.test"}, dst: "203.0.113.11:22", wantRule: "203.0.113.11"},
		{name: "stub's name, address in the floor", allow: []string{"private.test"}, answered: map[string]string{"10.0.0.5": "private.test"},
			dst: "10.0.0.5:5432", wantRule: "floor"},
		{name: "address alone, deny mode", allow: []string{"public.test"}, dst: "203.0.113.10:443", wantRule: "deny mode"},
		{name: "address alone, IP rule", allow: []string{"203.0.113.0/24:7"}, dst: "203.0.113.10:7", wantAllow: true, wantRule: "203.0.113.0/24:7", addrs: "203.0.113.10"},
		{name: "address alone, allow mode", mode: ModeAllow, dst: "203.0.113.10:7", wantAllow: true, wantRule: "allow mode", addrs: "203.0.113.10"},
		{name: "address alone, floor in allow mode", mode: ModeAllow, dst: "169.254.169.254:80", wantRule: "floor"},
		{name: "IPv6 floor in allow mode", mode: ModeAllow, dst: "[fd00:ec2::254]:80", wantRule: "floor"},
		{name: "NAT64 of metadata in allow mode", mode: ModeAllow, dst: "[64:ff9b::a9fe:a9fe]:80", wantRule: "floor"},
		{name: "the capture listener itself", mode: ModeAllow, dst: "127.0.0.1:3129", wantRule: "floor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode := tt.mode
			if mode == "" {
				mode = ModeDeny
			}
			p := newTestProxy(t, mustRules(t, mode, tt.allow, tt.block), records)
			for a, n := range tt.answered {
				p.Proxy.dns.answered.remember(n, []netip.Addr{netip.MustParseAddr(a)})
			}
			kind := sniffNone
			if tt.sent != "" {
				kind = sniffTLS
			}
			dec, from := p.decideCaptured(context.Background(), netip.MustParseAddrPort(tt.dst), tt.sent, kind)
			wantFrom := map[bool]string{true: "dns", false: "address"}[tt.answered[netip.MustParseAddrPort(tt.dst).Addr().String()] != ""]
			if tt.sent != "" {
				wantFrom = sniffTLS
			}
			if from != wantFrom {
				t.Errorf("named by %q, want %q", from, wantFrom)
			}
			if dec.Allowed != tt.wantAllow || dec.Rule != tt.wantRule {
				t.Fatalf("allowed %v by %q (%s), want %v by %q", dec.Allowed, dec.Rule, dec.Reason, tt.wantAllow, tt.wantRule)
			}
			if got := strings.Trim(fmt.Sprint(dec.Addrs), "[]"); tt.wantAllow && got != tt.addrs {
				t.Errorf("dials %s, want %s", got, tt.addrs)
			}
		})
	}
}

// TestAnsweredForgetsOldest: the stub's memory of addresses is bounded,
// and the latest answer for an address names it.
func TestAnsweredForgetsOldest(t *testing.T) {
	var a answered
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}) }
	for i := range maxAnswered + 1 {
		a.remember(fmt.Sprintf("n%d.test", i), []netip.Addr{addr(i)})
	}
	if got := a.name(addr(0)); got != "" {
		t.Errorf("the oldest address still names %q", got)
	}
	if got := a.name(addr(maxAnswered)); got != fmt.Sprintf("n%d.test", maxAnswered) {
		t.Errorf("the newest names %q", got)
	}
	a.remember("again.test", []netip.Addr{addr(1)})
	if got := a.name(addr(1)); got != "again.test" {
		t.Errorf("a second answer for an address names %q, want again.test", got)
	}
	if len(a.names) != maxAnswered || len(a.order) != maxAnswered {
		t.Errorf("holds %d names, %d in order; want %d", len(a.names), len(a.order), maxAnswered)
	}
	if got := a.name(netip.MustParseAddr("::ffff:198.18.0.2")); got != "n2.test" {
		t.Errorf("a v4-mapped address names %q, want n2.test", got)
	}
}
