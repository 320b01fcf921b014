package egress

import (
	"bytes"
	"context"
	"net/netip"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func FuzzSOCKS5Request(f *testing.F) {
	f.Add([]byte{5, 1, 0, 1, 203, 0, 113, 10, 0, 80})
	f.Add(append([]byte{5, 1, 0, 3, 11}, "example.com\x01\xbb"...))
	f.Add(append([]byte{5, 1, 0, 4}, append(netip.MustParseAddr("2001:db8::1").AsSlice(), 0, 22)...))
	f.Add([]byte{5, 2, 0, 1, 1, 2, 3, 4, 0, 80})
	f.Add([]byte{5, 1, 0, 3, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := readRequest(bytes.NewReader(b))
		if err != nil {
			return
		}
		if req.host == "" || req.port == 0 {
			t.Fatalf("accepted %x as %+v", b, req)
		}
		// Whatever the host is, deciding on it must not panic, and in deny
		// mode with no rules it must be denied.
		d := &Decider{Rules: NewRules(ModeDeny, nil, nil), Session: "s"}
		if dec := d.Decide(context.Background(), req.host, req.port); dec.Allowed {
			t.Fatalf("%q allowed with no rules", req.host)
		}
	})
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "10.0.0.0/8:5432", "[2001:db8::1]:443",
		"2001:db8::/32:443", "bücher.example", "::ffff:10.0.0.0/104", "a:b", "[x]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %v; its String %q parses as %v, %v", s, r, r.String(), again, err)
		}
	})
}

func FuzzDNSQuery(f *testing.F) {
	for _, q := range []struct {
		name string
		t    dnsmessage.Type
	}{{"allowed.test.", dnsmessage.TypeA}, {"denied.test.", dnsmessage.TypeTXT}, {"x.allowed.test.", dnsmessage.TypeAAAA}} {
		f.Add(dnsQuery(f, q.name, q.t))
	}
	f.Add([]byte{0, 1, 2})
	// The resolver points at a closed port: fuzzing must not depend on, or
	// flood, a real server. Denied names never reach it anyway.
	res, err := NewResolver("127.0.0.1:9")
	if err != nil {
		f.Fatal(err)
	}
	p := New(Config{Rules: mustRules(f, ModeDeny, []string{"*.allowed.test"}, nil), Resolver: res})
	defer p.Close()
	p.dns.limit = newLimiter(1e9, 1e9)
	f.Fuzz(func(t *testing.T, q []byte) {
		resp := p.dns.answer(context.Background(), q, true)
		if resp == nil {
			return
		}
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil {
			t.Fatalf("answer does not parse: %v", err)
		}
		if len(resp) > dnsMaxUDP {
			t.Fatalf("UDP answer of %d bytes", len(resp))
		}
	})
}
