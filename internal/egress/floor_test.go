package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestFloor(t *testing.T) {
	host := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8::7")}
	tests := []struct {
		addr string
		want string // a part of the reason; "" = not in the floor
	}{
		{"0.0.0.0", "this network"},
		{"10.0.0.5", "RFC 1918"},
		{"172.16.0.1", "RFC 1918"},
		{"172.31.255.255", "RFC 1918"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "RFC 1918"},
		{"100.64.0.1", "CGNAT"},
		{"100.100.100.200", "Alibaba"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "metadata"},
		{"169.254.1.1", "link-local"},
		{"192.0.0.1", "IETF"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"224.0.0.1", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::10.0.0.1", "IPv4-compatible"},
		{"fc00::1", "ULA"},
		{"fd12:3456::1", "ULA"},
		{"fd00:ec2::254", "AWS"},
		{"fe80::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.5", "RFC 1918"},
		{"::ffff:169.254.169.254", "metadata"},
		{"64:ff9b::a00:5", "embeds 10.0.0.5 (NAT64)"},
		{"64:ff9b::7f00:1", "embeds 127.0.0.1 (NAT64)"},
		{"64:ff9b::5db8:d822", ""}, // NAT64 of 93.184.216.34
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:a00:5::1", "embeds 10.0.0.5 (6to4)"},
		{"2002:5db8:d822::1", ""},
		{"2001:0:a9fe:a9fe::1", "Teredo server"},
		{"2001:0:5db8:d822::f5ff:fffa", "embeds 10.0.0.5 (Teredo client)"},
		{"198.51.100.7", "this host"},
		{"::ffff:198.51.100.7", "this host"},
		{"2001:db8::7", "this host"},
		{"64:ff9b::c633:6407", "embeds 198.51.100.7 (NAT64), an address of this host"},
		// Public and documentation addresses pass (tests use the latter).
		{"93.184.216.34", ""},
		{"1.1.1.1", ""},
		{"203.0.113.10", ""},
		{"198.51.100.8", ""},
		{"192.0.2.1", ""},
		{"2606:4700::1111", ""},
		{"2001:db8::8", ""},
	}
	for _, tt := range tests {
		got := floorReason(netip.MustParseAddr(tt.addr), host)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("floorReason(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestFloorTable checks the table itself: canonical prefixes, a reason for
// each, no range listed twice, and no documentation range.
func TestFloorTable(t *testing.T) {
	seen := map[netip.Prefix]bool{}
	for _, f := range floorTable {
		if f.prefix != f.prefix.Masked() || f.reason == "" || f.prefix.Addr().Is4In6() {
			t.Errorf("floor entry %v %q is not canonical or has no reason", f.prefix, f.reason)
		}
		if seen[f.prefix] {
			t.Errorf("floor entry %v listed twice", f.prefix)
		}
		seen[f.prefix] = true
		for _, doc := range []string{"192.0.2.1", "198.51.100.1", "203.0.113.1", "2001:db8::1"} {
			if f.prefix.Contains(netip.MustParseAddr(doc)) {
				t.Errorf("floor entry %v covers the documentation address %s", f.prefix, doc)
			}
		}
	}
}
