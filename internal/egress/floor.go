package egress

import (
	"encoding/binary"
	"net/netip"
)

// floorRange is one range of the floor and why it is there; the reason is
// what a denied agent reads ("resolves to 10.0.0.5, a private address (RFC
// 1918)").
type floorRange struct {
	prefix netip.Prefix
	reason string
}

// floorTable is the floor: the table of destinations that no hostname rule and no mode can
// open: only an explicit IP or CIDR allow rule naming the address lifts it.
// When ranges nest, the longest prefix gives the reason, so the table's order
// does not matter.
//
// Not in the floor, on purpose: the documentation ranges 192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32. Nothing on the public
// Internet routes them, so they reach nothing a sandbox could abuse, and test
// networks (ours included) use them as stand-ins for public hosts.
var floorTable = []floorRange{
	{pfx("0.0.0.0/8"), `"this network" (0.0.0.0/8)`},
	{pfx("10.0.0.0/8"), "a private address (RFC 1918)"},
	{pfx("100.64.0.0/10"), "a shared CGNAT address (100.64.0.0/10)"},
	{pfx("100.100.100.200/32"), "a cloud metadata address (Alibaba)"},
	{pfx("127.0.0.0/8"), "a loopback address"},
	{pfx("169.254.0.0/16"), "a link-local address"},
	{pfx("169.254.169.254/32"), "a cloud metadata address"},
	{pfx("172.16.0.0/12"), "a private address (RFC 1918)"},
	{pfx("192.0.0.0/24"), "an IETF protocol address (192.0.0.0/24)"},
	{pfx("192.168.0.0/16"), "a private address (RFC 1918)"},
	{pfx("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"},
	{pfx("224.0.0.0/4"), "a multicast address"},
	{pfx("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"},
	{pfx("255.255.255.255/32"), "the broadcast address"},

	{pfx("::/128"), "the unspecified address"},
	{pfx("::1/128"), "a loopback address"},
	{pfx("::/96"), "an IPv4-compatible address (deprecated)"},
	{pfx("64:ff9b:1::/48"), "a local-use NAT64 address (RFC 8215)"},
	{pfx("fc00::/7"), "a unique local address (IPv6 ULA)"},
	{pfx("fd00:ec2::254/128"), "a cloud metadata address (AWS)"},
	{pfx("fe80::/10"), "a link-local address"},
	{pfx("fec0::/10"), "a site-local address (deprecated)"},
	{pfx("ff00::/8"), "a multicast address"},
}

// Ranges of IPv6 that carry an IPv4 address inside; the embedded address
// goes through the floor too, so that 64:ff9b::a00:5 is refused like
// 10.0.0.5.
var (
	nat64     = pfx("64:ff9b::/96")
	sixToFour = pfx("2002::/16")
	teredo    = pfx("2001::/32")
)

// embedding is where one form of IPv6 carries an IPv4 address: the 32 bits
// from bit offset of the addresses in within, inverted when invert is set.
type embedding struct {
	within netip.Prefix
	offset int
	invert bool
	how    string
}

// embeddings are the IPv4 addresses an IPv6 address may carry: the last 32
// bits of NAT64 (RFC 6052), bits 16–47 of 6to4 (RFC 3056), and for Teredo
// (RFC 4380) the server (bits 32–63) and the client (the last 32 bits,
// inverted). IPv4-mapped addresses need no row: every address is unmapped
// before it is checked. IPv4-compatible ones (::/96) are in floorTable.
var embeddings = []embedding{
	{nat64, 96, false, "NAT64"},
	{sixToFour, 16, false, "6to4"},
	{teredo, 32, false, "Teredo server"},
	{teredo, 96, true, "Teredo client"},
}

// field returns the IPv4 address e carries in a.
func (e embedding) field(a netip.Addr) netip.Addr {
	b := a.As16()
	v := binary.BigEndian.Uint32(b[e.offset/8:])
	if e.invert {
		v = ^v
	}
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], v)
	return netip.AddrFrom4(out)
}

// withField returns a with v in the field of e.
func (e embedding) withField(a, v netip.Addr) netip.Addr {
	b, f := a.As16(), v.As4()
	n := binary.BigEndian.Uint32(f[:])
	if e.invert {
		n = ^n
	}
	binary.BigEndian.PutUint32(b[e.offset/8:], n)
	return netip.AddrFrom16(b)
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// floorReason returns why a is in the floor, or "" when it is not. a must be
// unmapped. hostAddrs are the host's own addresses, which are in the floor
// too: a service listening on the host's public address is still the host.
func floorReason(a netip.Addr, hostAddrs []netip.Addr) string {
	a = a.Unmap().WithZone("")
	for _, h := range hostAddrs {
		if h.Unmap().WithZone("") == a {
			return "an address of this host"
		}
	}
	if r := tableReason(a); r != "" {
		return r
	}
	for _, e := range embeddedV4(a) {
		if r := floorReason(e.addr, hostAddrs); r != "" {
			return "embeds " + e.addr.String() + " (" + e.how + "), " + r
		}
	}
	return ""
}

func tableReason(a netip.Addr) string {
	best, reason := -1, ""
	for _, f := range floorTable {
		if f.prefix.Contains(a) && f.prefix.Bits() > best {
			best, reason = f.prefix.Bits(), f.reason
		}
	}
	return reason
}

type embedded struct {
	addr netip.Addr
	how  string
}

// embeddedV4 returns the IPv4 addresses an IPv6 address carries (see
// embeddings).
func embeddedV4(a netip.Addr) []embedded {
	if !a.Is6() {
		return nil
	}
	var out []embedded
	for _, e := range embeddings {
		if e.within.Contains(a) {
			out = append(out, embedded{e.field(a), e.how})
		}
	}
	return out
}

// LiftsFloor reports whether allowing r opens a destination that the floor
// refuses: whether its range overlaps a range of floorTable, either
// directly or through the IPv4 address an IPv6 form carries (NAT64, 6to4,
// Teredo; IPv4-mapped rules are unmapped by ParseRule). Such an allow rule
// is a loosening, and every place that reports loosenings asks this. A name
// rule never lifts the floor: what a name resolves to still goes through it.
// The host's own addresses are not known here; they are in the floor at run
// time only.
func (r Rule) LiftsFloor() bool {
	_, ok := floorWitness(r)
	return ok
}

// floorWitness returns an address that r matches and the floor refuses, if
// there is one.
func floorWitness(r Rule) (netip.Addr, bool) {
	if !r.IsAddr() {
		return netip.Addr{}, false
	}
	p := r.Prefix
	for _, f := range floorTable {
		if a, ok := overlap(p, f.prefix); ok {
			return a, true
		}
	}
	for _, e := range embeddings {
		// q is the part of p inside the embedding's range: the more
		// specific of the two, as prefixes either nest or are disjoint.
		q, ok := p, p.Overlaps(e.within)
		if !ok {
			continue
		}
		if e.within.Bits() > q.Bits() {
			q = e.within
		}
		// The IPv4 addresses q can carry: the bits of the field that q
		// fixes, the rest free.
		fixed := min(max(q.Bits()-e.offset, 0), 32)
		carried := netip.PrefixFrom(e.field(q.Addr()), fixed).Masked()
		for _, f := range floorTable {
			if v, ok := overlap(carried, f.prefix); ok {
				return e.withField(q.Addr(), v), true
			}
		}
	}
	return netip.Addr{}, false
}

// overlap returns an address in both a and b, if there is one. Two prefixes
// overlap only when one contains the other, so the first address of the
// smaller one is in both.
func overlap(a, b netip.Prefix) (netip.Addr, bool) {
	switch {
	case !a.Overlaps(b):
		return netip.Addr{}, false
	case a.Bits() >= b.Bits():
		return a.Masked().Addr(), true
	}
	return b.Masked().Addr(), true
}
