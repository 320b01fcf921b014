package egress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestLiftsFloorRows are the rules a review found opening a floor address
// with no LOOSENED line, and rules that must not count as loosenings. A
// fixed row stays.
func TestLiftsFloorRows(t *testing.T) {
	tests := []struct {
		rule string
		want bool
	}{
		{"169.0.0.0/8", true}, // holds 169.254.169.254, the metadata address
		{"172.0.0.0/8", true},
		{"192.0.0.0/8", true},
		{"0.0.0.0/0", true},
		{"10.0.0.5:5432", true},
		{"100.100.100.200", true},
		{"198.18.0.0/15", true},
		{"224.0.0.0/3", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:10.0.0.0/104", true},
		{"[::ffff:10.0.0.0/104]:443", true},
		{"::a00:5", true}, // IPv4-compatible
		{"64:ff9b::a00:0/104", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::/96", true},
		{"64:ff9b::/64", true},
		{"64:ff9b:1::/48", true},
		{"2002::/16", true},
		{"2002:a00::/24", true},
		{"2002:a9fe:a9fe::/48", true},
		{"2001::/32", true},
		{"2001:0:a9fe:a9fe::/64", true},           // Teredo server 169.254.169.254
		{"2001:0:5db8:d822::f5ff:fffa", true},     // Teredo client 10.0.0.5
		{"2001:0:5db8:d822::/96", true},           // every client
		{"2001:0:5db8:d822:0:0:f500::/104", true}, // clients 10.255.0.0/16
		{"fec0::/10", true},
		{"fc00::/7", true},
		{"fd00:ec2::254", true},
		{"fe80::/10", true},
		{"::/0", true},
		{"::1", true},
		{"8000::/1", true}, // holds fc00::/7
		{"0.0.0.0/1", true},

		{"93.184.216.34", false},
		{"93.184.216.0/24", false},
		{"1.0.0.0/8", false},
		{"8.8.8.8:53", false},
		{"198.51.100.0/24", false},
		{"203.0.113.0/24", false},
		{"192.0.2.0/24", false},
		{"2606:4700::/32", false},
		{"2001:db8::/32", false},
		{"64:ff9b::5db8:d822", false},
		{"64:ff9b::5db8:0/112", false},
		{"2002:5db8:d822::/48", false},
		{"2001:0:5db8:d822::a247:27dd", false}, // Teredo, both ends public
		{"::fffe:0:0/95", false},
		{"example.com", false},
		{"*.internal", false},
		{"localhost", false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.LiftsFloor(); got != tt.want {
			t.Errorf("ParseRule(%q).LiftsFloor() = %v, want %v", tt.rule, got, tt.want)
		}
	}
}

// TestLiftsFloorProperty checks that an address rule lifts the floor if and
// only if its range overlaps the floor, against floorTable and floorReason
// themselves: every floor range, its supersets and subsets, their IPv4
// forms inside IPv6, and random prefixes near them all.
func TestLiftsFloorProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	var cases []netip.Prefix
	for _, f := range floorTable {
		for bits := f.prefix.Bits(); bits >= 0; bits-- {
			cases = append(cases, netip.PrefixFrom(f.prefix.Addr(), bits).Masked()) // supersets
		}
		for range 20 {
			cases = append(cases, subPrefix(rng, f.prefix)) // subsets
		}
		if !f.prefix.Addr().Is4() {
			continue
		}
		for _, e := range embeddings {
			for range 10 {
				sub := subPrefix(rng, f.prefix)
				a := e.withField(randomIn(rng, e.within), sub.Addr())
				if !e.invert {
					// The IPv6 form of the whole range, as a prefix.
					cases = append(cases, netip.PrefixFrom(a, e.offset+sub.Bits()).Masked())
				}
				cases = append(cases, netip.PrefixFrom(a, 128))
			}
		}
		// The IPv4-mapped and IPv4-compatible forms, as a user writes them.
		for range 10 {
			sub := subPrefix(rng, f.prefix)
			for _, form := range []string{"::ffff:%s/%d", "::%s/%d"} {
				s := fmt.Sprintf(form, sub.Addr(), 96+sub.Bits())
				r, err := ParseRule(s)
				if err != nil {
					t.Fatalf("ParseRule(%q): %v", s, err)
				}
				cases = append(cases, r.Prefix)
			}
		}
	}
	// Random prefixes anywhere, and near the embedding ranges.
	for range 5000 {
		var base netip.Prefix
		switch rng.IntN(3) {
		case 0:
			base = netip.MustParsePrefix("0.0.0.0/0")
		case 1:
			base = netip.MustParsePrefix("::/0")
		default:
			base = embeddings[rng.IntN(len(embeddings))].within
		}
		cases = append(cases, subPrefix(rng, base))
	}

	var lifted, kept int
	for _, p := range cases {
		kind := KindCIDR
		if p.IsSingleIP() {
			kind = KindIP
		}
		r := Rule{Kind: kind, Prefix: canonicalPrefix(p)}
		if again, err := ParseRule(r.String()); err != nil || again != r {
			t.Fatalf("rule %v does not parse back: %v, %v", r, again, err)
		}
		got := r.LiftsFloor()
		direct := false
		for _, f := range floorTable {
			direct = direct || f.prefix.Overlaps(r.Prefix)
		}
		if direct && !got {
			t.Errorf("%v overlaps the floor table but does not lift the floor", r)
		}
		if got {
			lifted++
			w, _ := floorWitness(r)
			if !r.Prefix.Contains(w) || floorReason(w, nil) == "" {
				t.Errorf("%v lifts the floor, but its witness %v is outside it or not in the floor (%q)", r, w, floorReason(w, nil))
			}
			continue
		}
		kept++
		// Nothing the rule matches may be in the floor: random addresses
		// of p, and every floor range's addresses carried in p's IPv6 forms.
		for range 20 {
			if a := randomIn(rng, r.Prefix); floorReason(a, nil) != "" {
				t.Errorf("%v does not lift the floor, but matches %v: %s", r, a, floorReason(a, nil))
			}
		}
		for _, e := range embeddings {
			if !r.Prefix.Overlaps(e.within) {
				continue
			}
			for _, f := range floorTable {
				if !f.prefix.Addr().Is4() {
					continue
				}
				a := e.withField(randomIn(rng, r.Prefix), randomIn(rng, f.prefix))
				if r.Prefix.Contains(a) && floorReason(a, nil) != "" {
					t.Errorf("%v does not lift the floor, but matches %v: %s", r, a, floorReason(a, nil))
				}
			}
		}
	}
	if lifted < 1000 || kept < 1000 {
		t.Errorf("the cases are lopsided: %d lift the floor, %d do not", lifted, kept)
	}
}

// TestLiftsFloorDecides checks that the witness is what an allow rule
// lets through: the decider refuses it without the rule and allows it with.
func TestLiftsFloorDecides(t *testing.T) {
	for _, s := range []string{"169.0.0.0/8", "172.0.0.0/8", "192.0.0.0/8", "64:ff9b::a00:0/104", "fec0::/10", "2002::/16", "2001:0:5db8:d822::/96"} {
		r, _ := ParseRule(s)
		w, ok := floorWitness(r)
		if !ok {
			t.Fatalf("%s: no address in the floor", s)
		}
		for _, allow := range [][]Rule{nil, {r}} {
			d := &Decider{Rules: NewRules(ModeAllow, allow, nil), Session: "s"}
			dec := d.Decide(context.Background(), w.String(), 443)
			if dec.Allowed != (allow != nil) {
				t.Errorf("%s, allow %v: %v allowed = %v (%s)", s, allow, w, dec.Allowed, dec.Reason)
			}
		}
	}
}

// subPrefix returns a random prefix inside p.
func subPrefix(rng *rand.Rand, p netip.Prefix) netip.Prefix {
	bits := p.Bits() + rng.IntN(p.Addr().BitLen()-p.Bits()+1)
	return netip.PrefixFrom(randomIn(rng, p), bits).Masked()
}

// randomIn returns a random address in p.
func randomIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := range b {
		free := max(0, min(8, (i+1)*8-p.Bits()))
		b[i] |= byte(rng.UintN(256)) & byte(1<<free-1)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
