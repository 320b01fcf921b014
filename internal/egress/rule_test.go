package egress

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		kind    RuleKind
		want    string // String() of the parsed rule
		wantErr bool
	}{
		{"example.com", KindName, "example.com", false},
		{"Example.COM.", KindName, "example.com", false},
		{"example.com:443", KindName, "example.com:443", false},
		{"*.example.com", KindWildcard, "*.example.com", false},
		{"*.Example.com:8443", KindWildcard, "*.example.com:8443", false},
		{"bücher.example", KindName, "xn--bcher-kva.example", false},
		{"BÜCHER.example", KindName, "xn--bcher-kva.example", false},
		{"10.0.0.5", KindIP, "10.0.0.5", false},
		{"10.0.0.0/8", KindCIDR, "10.0.0.0/8", false},
		{"10.1.2.3/8", KindCIDR, "10.0.0.0/8", false},
		{"10.0.0.0/8:5432", KindCIDR, "10.0.0.0/8:5432", false},
		{"10.0.0.5/32", KindIP, "10.0.0.5", false},
		{"127.0.0.1:8080", KindIP, "127.0.0.1:8080", false},
		{"2001:db8::1", KindIP, "2001:db8::1", false},
		{"[2001:db8::1]:443", KindIP, "[2001:db8::1]:443", false},
		{"[2001:db8::1]", KindIP, "2001:db8::1", false},
		{"2001:db8::/32", KindCIDR, "2001:db8::/32", false},
		{"2001:db8::/32:443", KindCIDR, "[2001:db8::/32]:443", false},
		{"[2001:db8::/32]:443", KindCIDR, "[2001:db8::/32]:443", false},
		{"::ffff:10.0.0.5", KindIP, "10.0.0.5", false},
		{"::ffff:10.0.0.0/104", KindCIDR, "10.0.0.0/8", false},
		{"  example.com  ", KindName, "example.com", false},

		{"", 0, "", true},
		{"*", 0, "", true},
		{"*.", 0, "", true},
		{"a.*.example.com", 0, "", true},
		{"*example.com", 0, "", true},
		{"example.com:0", 0, "", true},
		{"example.com:65536", 0, "", true},
		{"example.com:https", 0, "", true},
		{"example.com:+443", 0, "", true},
		{"example..com", 0, "", true},
		{"exa mple.com", 0, "", true},
		{"under_score.example.com", 0, "", true},
		{"-lead.example.com", 0, "", true},
		{"2130706433", 0, "", true}, // reads as 127.0.0.1
		{"0x7f.1", 0, "", true},
		{"1.2.3", 0, "", true},
		{"[example.com]:443", 0, "", true},
		{"[2001:db8::1]443", 0, "", true},
		{"[2001:db8::1", 0, "", true},
		{"10.0.0.0/33", 0, "", true},
		{"fe80::1%eth0", 0, "", true},
		{"a:b:c", 0, "", true},
		{"0\xff", 0, "", true}, // invalid UTF-8, found by FuzzParseRule
		{string(make([]byte, 300)), 0, "", true},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseRule(%q) = %v, want an error", tt.in, r)
			} else if !errors.Is(err, ErrInvalidRule) {
				t.Errorf("ParseRule(%q) error %v does not wrap ErrInvalidRule", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if r.Kind != tt.kind || r.String() != tt.want {
			t.Errorf("ParseRule(%q) = %v %q, want %v %q", tt.in, r.Kind, r, tt.kind, tt.want)
		}
		if again, err := ParseRule(r.String()); err != nil || again != r {
			t.Errorf("ParseRule(%q) round trip: %v, %v", r.String(), again, err)
		}
	}
}

func TestRuleMatch(t *testing.T) {
	tests := []struct {
		rule  string
		host  string // a name or an address
		port  uint16
		match bool
	}{
		{"example.com", "example.com", 443, true},
		{"example.com", "EXAMPLE.com.", 443, true},
		{"example.com", "a.example.com", 443, false},
		{"example.com:443", "example.com", 443, true},
		{"example.com:443", "example.com", 80, false},
		{"*.example.com", "a.example.com", 443, true},
		{"*.example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"*.example.com", "badexample.com", 443, false},
		{"*.example.com:443", "a.example.com", 80, false},
		{"xn--bcher-kva.example", "Bücher.example", 80, true},
		{"10.0.0.0/8", "10.1.2.3", 5432, true},
		{"10.0.0.0/8:5432", "10.1.2.3", 5432, true},
		{"10.0.0.0/8:5432", "10.1.2.3", 5433, false},
		{"10.0.0.0/8", "::ffff:10.1.2.3", 1, true},
		{"10.0.0.0/8", "11.0.0.1", 1, false},
		{"[2001:db8::1]:443", "2001:db8::1", 443, true},
		{"2001:db8::/32", "2001:db8:ffff::1", 1, true},
		{"2001:db8::/32", "2001:db9::1", 1, false},
		// A name rule never matches an address and an IP rule never a name.
		{"10.0.0.5", "ten.example", 1, false},
		{"example.com", "93.184.216.34", 1, false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		if a, err := netip.ParseAddr(tt.host); err == nil {
			got = r.matchAddr(a.Unmap()) && r.portMatches(tt.port, true)
		} else {
			name, err := NormalizeName(tt.host)
			if err != nil {
				t.Fatal(err)
			}
			got = r.matchName(name) && r.portMatches(tt.port, true)
		}
		if got != tt.match {
			t.Errorf("rule %q on %s:%d = %v, want %v", tt.rule, tt.host, tt.port, got, tt.match)
		}
	}
}

func TestRulesRuntime(t *testing.T) {
	rs := mustRules(t, ModeDeny, []string{"b.example", "a.example"}, []string{"*.evil.example"})
	before := rs.Snapshot()
	r := func(s string) Rule {
		x, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if !rs.Allow(r("10.0.0.0/8")) || rs.Allow(r("10.0.0.0/8")) {
		t.Error("Allow: want a change the first time only")
	}
	if !rs.Block(r("a.example")) {
		t.Error("Block(a.example) changed nothing")
	}
	want := []string{"allow b.example", "allow 10.0.0.0/8", "block a.example", "block *.evil.example"}
	var got []string
	for _, e := range rs.List() {
		got = append(got, string(e.List)+" "+e.Rule.String())
	}
	if len(got) != len(want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("List = %q, want %q", got, want)
			break
		}
	}
	if !rs.Reset(r("a.example")) || rs.Reset(r("a.example")) {
		t.Error("Reset: want a change the first time only")
	}
	if len(before.List()) != 3 {
		t.Errorf("an old snapshot changed: %v", before.List())
	}
	if NewRules("typo", nil, nil).Snapshot().Mode() != ModeDeny {
		t.Error("an unknown mode must be deny")
	}
}

// TestRuleJSON: a policy carries parsed rules; in JSON (policy show --json,
// a session's job) they are written as the user writes them and read back
// by ParseRule, so a bad rule cannot come in that way either.
func TestRuleJSON(t *testing.T) {
	var in []Rule
	for _, s := range []string{"example.com", "*.example.com:443", "10.0.0.0/8", "[2001:db8::1]:443", "2001:db8::/32"} {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, r)
	}
	b, err := json.Marshal(in)
	if want := `["example.com","*.example.com:443","10.0.0.0/8","[2001:db8::1]:443","2001:db8::/32"]`; err != nil || string(b) != want {
		t.Fatalf("json.Marshal = %s, %v; want %s", b, err, want)
	}
	var out []Rule
	if err := json.Unmarshal(b, &out); err != nil || !slices.Equal(in, out) {
		t.Errorf("json.Unmarshal = %v, %v; want %v", out, err, in)
	}
	if err := json.Unmarshal([]byte(`["bad host!"]`), &out); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("json.Unmarshal of a bad rule: %v", err)
	}
	if _, err := json.Marshal([]Rule{{}}); err == nil {
		t.Error("the zero Rule was encoded")
	}
}
