package egress

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	records := map[string][]string{
		"public.test.":  {"203.0.113.10", "2001:db8::10"},
		"private.test.": {"10.0.0.5"},
		"mixed.test.":   {"127.0.0.1", "203.0.113.11"},
		"a.wild.test.":  {"203.0.113.12"},
		"meta.test.":    {"169.254.169.254"},
		"mapped.test.":  {"::ffff:10.0.0.5"},
		"nat64.test.":   {"64:ff9b::a00:5"},
		"blocked.test.": {"203.0.113.13"},
	}
	tests := []struct {
		name      string
		mode      Mode
		allow     []string
		block     []string
		host      string
		port      uint16
		wantAllow bool
		wantRule  string
		reason    string // part of the reason (denials)
		fix       string // part of the fix (denials)
		addrs     string // the addresses to dial, joined by spaces (allowed)
	}{
		{name: "empty allowlist", mode: ModeDeny, host: "public.test", port: 443,
			wantRule: "deny mode", reason: "not in the allowlist (deny mode)", fix: "stockade network agent allow -s s1 public.test"},
		{name: "exact name", mode: ModeDeny, allow: []string{"public.test"}, host: "PUBLIC.test.", port: 443,
			wantAllow: true, wantRule: "public.test", addrs: "203.0.113.10 2001:db8::10"},
		{name: "name with port", mode: ModeDeny, allow: []string{"public.test:443"}, host: "public.test", port: 80,
			wantRule: "deny mode", reason: "not in the allowlist"},
		{name: "wildcard", mode: ModeDeny, allow: []string{"*.wild.test"}, host: "a.wild.test", port: 443,
			wantAllow: true, wantRule: "*.wild.test", addrs: "203.0.113.12"},
		{name: "wildcard not apex", mode: ModeDeny, allow: []string{"*.wild.test"}, host: "wild.test", port: 443,
			reason: "not in the allowlist"},
		{name: "block wins", mode: ModeDeny, allow: []string{"blocked.test"}, block: []string{"*.test"}, host: "blocked.test", port: 443,
			wantRule: "*.test", reason: "blocked by rule *.test", fix: "stockade network agent reset -s s1 '*.test'"},
		{name: "block port only", mode: ModeAllow, block: []string{"public.test:25"}, host: "public.test", port: 443,
			wantAllow: true, wantRule: "allow mode", addrs: "203.0.113.10 2001:db8::10"},
		{name: "allow mode", mode: ModeAllow, host: "public.test", port: 443,
			wantAllow: true, wantRule: "allow mode", addrs: "203.0.113.10 2001:db8::10"},
		{name: "private answer", mode: ModeAllow, host: "private.test", port: 443,
			wantRule: "floor", reason: "resolves to 10.0.0.5, a private address (RFC 1918)", fix: "agent allow -s s1 10.0.0.5"},
		{name: "name rule does not lift floor", mode: ModeDeny, allow: []string{"meta.test"}, host: "meta.test", port: 80,
			wantRule: "floor", reason: "resolves to 169.254.169.254, a cloud metadata address"},
		{name: "v4-mapped answer", mode: ModeAllow, host: "mapped.test", port: 80, wantRule: "floor", reason: "10.0.0.5"},
		{name: "nat64 answer", mode: ModeAllow, host: "nat64.test", port: 80, wantRule: "floor", reason: "embeds 10.0.0.5 (NAT64)"},
		{name: "ip rule lifts floor for a name", mode: ModeDeny, allow: []string{"private.test", "10.0.0.0/8:5432"}, host: "private.test", port: 5432,
			wantAllow: true, wantRule: "private.test", addrs: "10.0.0.5"},
		{name: "ip rule with another port", mode: ModeDeny, allow: []string{"private.test", "10.0.0.0/8:5432"}, host: "private.test", port: 22,
			wantRule: "floor", reason: "private"},
		{name: "private answers dropped", mode: ModeAllow, host: "mixed.test", port: 80,
			wantAllow: true, wantRule: "allow mode", addrs: "203.0.113.11"},
		{name: "block ip rule on answer", mode: ModeAllow, block: []string{"203.0.113.0/24"}, host: "public.test", port: 80,
			wantAllow: true, addrs: "2001:db8::10", wantRule: "allow mode"},
		{name: "does not resolve", mode: ModeAllow, host: "nx.test", port: 80, reason: "does not resolve"},
		{name: "invalid name", mode: ModeAllow, host: "bad_name.test", port: 80, wantRule: "invalid", reason: "not a valid hostname"},
		{name: "ip literal deny mode", mode: ModeDeny, host: "203.0.113.10", port: 80,
			wantRule: "deny mode", reason: "not in the allowlist", fix: "allow -s s1 203.0.113.10"},
		{name: "ip literal allow mode", mode: ModeAllow, host: "203.0.113.10", port: 80,
			wantAllow: true, wantRule: "allow mode", addrs: "203.0.113.10"},
		{name: "ip literal floor in allow mode", mode: ModeAllow, host: "127.0.0.1", port: 80,
			wantRule: "floor", reason: "127.0.0.1 is a loopback address", fix: "allow -s s1 127.0.0.1"},
		{name: "ip literal mapped", mode: ModeAllow, host: "::ffff:127.0.0.1", port: 80, wantRule: "floor", reason: "loopback"},
		{name: "ip rule on literal", mode: ModeDeny, allow: []string{"127.0.0.1"}, host: "127.0.0.1", port: 8080,
			wantAllow: true, wantRule: "127.0.0.1", addrs: "127.0.0.1"},
		{name: "name rule does not allow an ip", mode: ModeDeny, allow: []string{"public.test"}, host: "203.0.113.10", port: 80,
			reason: "not in the allowlist"},
		{name: "block cidr on literal", mode: ModeAllow, allow: []string{"10.0.0.5"}, block: []string{"10.0.0.0/8"}, host: "10.0.0.5", port: 80,
			wantRule: "10.0.0.0/8", reason: "blocked by rule 10.0.0.0/8"},
		{name: "zone", mode: ModeAllow, host: "fe80::1%lo", port: 80, wantRule: "invalid"},
		{name: "ipv6 metadata", mode: ModeAllow, host: "fd00:ec2::254", port: 80, wantRule: "floor", reason: "AWS"},
	}
	f := startFakeDNS(t, records)
	res := f.resolver(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Decider{Rules: mustRules(t, tt.mode, tt.allow, tt.block), Resolver: res, Session: "s1"}
			dec := d.Decide(context.Background(), tt.host, tt.port)
			if dec.Allowed != tt.wantAllow {
				t.Fatalf("Allowed = %v, want %v (%+v)", dec.Allowed, tt.wantAllow, dec)
			}
			if tt.wantRule != "" && dec.Rule != tt.wantRule {
				t.Errorf("Rule = %q, want %q", dec.Rule, tt.wantRule)
			}
			if !strings.Contains(dec.Reason, tt.reason) || !strings.Contains(dec.Fix, tt.fix) {
				t.Errorf("Reason %q, Fix %q; want %q and %q in them", dec.Reason, dec.Fix, tt.reason, tt.fix)
			}
			var addrs []string
			for _, a := range dec.Addrs {
				addrs = append(addrs, a.String())
			}
			if got := strings.Join(addrs, " "); got != tt.addrs {
				t.Errorf("Addrs = %q, want %q", got, tt.addrs)
			}
		})
	}
}

func TestDenialText(t *testing.T) {
	d := &Decider{Rules: mustRules(t, ModeDeny, nil, []string{"*.evil.test"}), Session: "abc123"}
	dec := d.DecideName("x.evil.test")
	body := DenialText(dec)
	for _, want := range []string{"x.evil.test", "blocked by rule *.evil.test", "stockade network agent reset -s abc123 '*.evil.test'"} {
		if !strings.Contains(body, want) {
			t.Errorf("denial text lacks %q:\n%s", want, body)
		}
	}
}

// TestFixForeground: a foreground run has no control socket, so a denial
// names the flag of the next run, not a network command.
func TestFixForeground(t *testing.T) {
	rules := NewRules(ModeDeny, nil, []Rule{mustRule(t, "blocked.test")})
	for _, tc := range []struct {
		foreground bool
		host, want string
	}{
		{false, "other.test", "stockade network agent allow -s s1 other.test"},
		{true, "other.test", "stockade run --agent-allow other.test … (again: a foreground run's rules are fixed while it runs)"},
		{true, "blocked.test", "stockade run without the agent_block rule blocked.test …"},
		{true, "10.0.0.5", "stockade run --agent-allow 10.0.0.5 …"},
	} {
		d := &Decider{Rules: rules, Session: "s1", Foreground: tc.foreground}
		dec := d.Decide(context.Background(), tc.host, 443)
		if dec.Allowed || !strings.HasPrefix(dec.Fix, tc.want) {
			t.Errorf("foreground %v, %s: fix %q, want %q", tc.foreground, tc.host, dec.Fix, tc.want)
		}
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDecideCurrentHostAddrs: an address the host gains after the decider
// was made is refused as the host's own, by address and by DecideAt, and
// an IP allow rule still lifts it.
func TestDecideCurrentHostAddrs(t *testing.T) {
	var now []netip.Addr
	d := &Decider{Rules: NewRules(ModeAllow, nil, nil), Session: "s1",
		CurrentHostAddrs: func() []netip.Addr { return now }}
	a := netip.MustParseAddr("198.51.100.77")
	if dec := d.Decide(context.Background(), a.String(), 22); !dec.Allowed {
		t.Fatalf("before the host has it: %+v, want allowed", dec)
	}
	now = []netip.Addr{a}
	if dec := d.Decide(context.Background(), a.String(), 22); dec.Allowed || !strings.Contains(dec.Reason, "an address of this host") {
		t.Errorf("once the host has it: %+v, want the floor's host address", dec)
	}
	if dec := d.DecideAt("name.test", netip.AddrPortFrom(a, 22)); dec.Allowed {
		t.Errorf("DecideAt: %+v, want refused", dec)
	}
	d.Rules = NewRules(ModeDeny, []Rule{mustRule(t, "198.51.100.77")}, nil)
	if dec := d.Decide(context.Background(), a.String(), 22); !dec.Allowed {
		t.Errorf("with an IP rule: %+v, want allowed", dec)
	}
}
