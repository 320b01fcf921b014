package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// RuleKind says what a rule matches.
type RuleKind int

// Rule kinds. Name and Wildcard rules match hostnames only; IP and CIDR rules
// match addresses only (an IP literal a client asked for, or an address a
// name resolved to).
const (
	KindName     RuleKind = iota + 1 // example.com
	KindWildcard                     // *.example.com: strict subdomains only
	KindIP                           // 10.0.0.5, 2001:db8::1
	KindCIDR                         // 10.0.0.0/8, 2001:db8::/32
)

func (k RuleKind) String() string {
	switch k {
	case KindName:
		return "name"
	case KindWildcard:
		return "wildcard"
	case KindIP:
		return "ip"
	case KindCIDR:
		return "cidr"
	}
	return "invalid"
}

// Rule is one allow or block entry. The zero Rule is invalid; make one with
// ParseRule. Rules are values: comparable with ==, safe to copy.
type Rule struct {
	Kind RuleKind
	// Name is the ASCII (punycode), lower-case name without a trailing dot;
	// for a wildcard, the suffix after "*.".
	Name string
	// Prefix is the address range of an IP (a full-length prefix) or CIDR
	// rule, always in canonical form (masked, IPv4 never v4-mapped).
	Prefix netip.Prefix
	// Port is the only port the rule matches; 0 means every port.
	Port uint16
}

// ErrInvalidRule is wrapped by every error ParseRule returns.
var ErrInvalidRule = errors.New("is not a network rule")

// RuleFix ends every refusal of a rule: what to write instead.
const RuleFix = `write a name, *.suffix, an IP or a CIDR, with an optional :port (e.g. "api.example.com:443")`

// maxRuleLen bounds a rule as written; the longest name is 253 bytes.
const maxRuleLen = 300

// ParseRule parses a rule as the user writes it: example.com, *.example.com,
// 10.0.0.5, 10.0.0.0/8, 2001:db8::1, 2001:db8::/32, each optionally with a
// port: example.com:443, 10.0.0.0/8:5432, [2001:db8::1]:443,
// [2001:db8::/32]:443 (an IPv6 rule with a port needs the brackets, except a
// CIDR, whose port cannot be confused with the address: 2001:db8::/32:443).
//
// It is the only parser of rules: the policy parses --agent-allow, config
// files and the project file with it when it loads them, and the session
// parses `stockade network agent allow` with it, so that every place refuses
// the same rules with the same line: `"a b" is not a network rule: …; write …`.
func ParseRule(s string) (Rule, error) {
	if len(s) > maxRuleLen {
		return Rule{}, fmt.Errorf("%q… %w: longer than %d bytes; %s", s[:40], ErrInvalidRule, maxRuleLen, RuleFix)
	}
	r, err := parseRule(strings.TrimSpace(s))
	if err != nil {
		return Rule{}, fmt.Errorf("%q %w: %v; %s", s, ErrInvalidRule, err, RuleFix)
	}
	return r, nil
}

// MarshalText writes r as ParseRule reads it, so that a policy with rules
// goes through JSON unchanged.
func (r Rule) MarshalText() ([]byte, error) {
	if r.Kind < KindName || r.Kind > KindCIDR {
		return nil, errors.New("encoding an invalid network rule")
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses text with ParseRule.
func (r *Rule) UnmarshalText(text []byte) error {
	p, err := ParseRule(string(text))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

func parseRule(s string) (Rule, error) {
	if s == "" {
		return Rule{}, errors.New("empty")
	}
	host, port, err := splitRulePort(s)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Port: port}
	if strings.HasPrefix(s, "[") && !isAddrLiteral(host) && !strings.Contains(host, "/") {
		return Rule{}, errors.New("only an IPv6 address goes in brackets")
	}
	switch {
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return Rule{}, err
		}
		if p.Addr().Zone() != "" {
			return Rule{}, errors.New("an address with a zone cannot be a rule")
		}
		r.Kind, r.Prefix = KindCIDR, canonicalPrefix(p)
		if r.Prefix.IsSingleIP() {
			r.Kind = KindIP
		}
	case isAddrLiteral(host):
		a, err := netip.ParseAddr(host)
		if err != nil {
			return Rule{}, err
		}
		if a.Zone() != "" {
			return Rule{}, errors.New("an address with a zone cannot be a rule")
		}
		a = a.Unmap()
		r.Kind, r.Prefix = KindIP, netip.PrefixFrom(a, a.BitLen())
	case strings.HasPrefix(host, "*."):
		name, err := NormalizeName(host[2:])
		if err != nil {
			return Rule{}, err
		}
		r.Kind, r.Name = KindWildcard, name
	default:
		if strings.Contains(host, "*") {
			return Rule{}, errors.New(`a wildcard must be the whole first label, as in "*.example.com"`)
		}
		name, err := NormalizeName(host)
		if err != nil {
			return Rule{}, err
		}
		r.Kind, r.Name = KindName, name
	}
	return r, nil
}

// canonicalPrefix unmaps a v4-mapped prefix (::ffff:10.0.0.0/104 is
// 10.0.0.0/8) and masks it, so that equal ranges make equal rules.
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	a, bits := p.Addr(), p.Bits()
	if a.Is4In6() && bits >= 96 {
		a, bits = a.Unmap(), bits-96
	}
	return netip.PrefixFrom(a, bits).Masked()
}

// isAddrLiteral reports whether host must be an address: it contains a colon
// (only IPv6 does, once the port is split off) or parses as one.
func isAddrLiteral(host string) bool {
	if strings.Contains(host, ":") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// splitRulePort splits an optional port off a rule. An unbracketed IPv6
// address (two or more colons, no slash) has no port.
func splitRulePort(s string) (string, uint16, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, errors.New(`missing "]"`)
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("unexpected %q after %q", rest, s[:end+1])
		}
		port, err := ParsePort(rest[1:])
		return host, port, err
	}
	if slash := strings.Index(s, "/"); slash >= 0 {
		// A prefix length has no colon, so a colon after the slash is a port.
		if i := strings.Index(s[slash:], ":"); i >= 0 {
			port, err := ParsePort(s[slash+i+1:])
			return s[:slash+i], port, err
		}
		return s, 0, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		i := strings.Index(s, ":")
		port, err := ParsePort(s[i+1:])
		return s[:i], port, err
	}
	return s, 0, nil // an IPv6 address without a port
}

// ParsePort parses a decimal TCP/UDP port, 1 to 65535.
func ParsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || s[0] == '+' {
		return 0, fmt.Errorf("invalid port %q: want 1 to 65535", s)
	}
	return uint16(n), nil
}

// NormalizeName returns the form in which names are compared: Unicode
// converted to punycode with the IDNA Lookup profile, lower case, one
// trailing dot removed. It refuses what cannot be a hostname: empty labels,
// labels over 63 bytes, names over 253, characters outside letters, digits
// and hyphen (underscores included: the Lookup profile applies STD3 rules),
// and names whose last label is all digits, which resolvers and URL parsers
// read as an IPv4 address in inet_aton form (2130706433, 0x7f.1).
func NormalizeName(name string) (string, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", errors.New("empty name")
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("name %q is not valid UTF-8", name)
	}
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", fmt.Errorf("converting %q to an ASCII name: %w", name, err)
	}
	ascii = strings.ToLower(ascii)
	// The result must itself be a valid name, or a rule would print as
	// something it cannot be parsed back from (found by FuzzParseRule).
	if again, err := idna.Lookup.ToASCII(ascii); err != nil || again != ascii {
		return "", fmt.Errorf("name %q does not convert to a stable ASCII name", name)
	}
	if len(ascii) > 253 {
		return "", fmt.Errorf("name %q is longer than 253 bytes", ascii)
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("name %q has an empty label or one longer than 63 bytes", ascii)
		}
	}
	if last := labels[len(labels)-1]; numericLabel(last) {
		return "", fmt.Errorf("name %q ends in a numeric label, which reads as an IPv4 address", ascii)
	}
	return ascii, nil
}

// numericLabel reports whether l is a number in the forms inet_aton
// accepts: decimal, octal (leading 0) or hex (0x...).
func numericLabel(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		l = h
		if l == "" {
			return true
		}
		for _, c := range l {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String returns the rule in the form ParseRule reads, so that
// ParseRule(r.String()) == r.
func (r Rule) String() string {
	var host string
	switch r.Kind {
	case KindName:
		host = r.Name
	case KindWildcard:
		host = "*." + r.Name
	case KindIP:
		host = r.Prefix.Addr().String()
	case KindCIDR:
		host = r.Prefix.String()
	default:
		return "invalid"
	}
	if r.Port == 0 {
		return host
	}
	if r.IsAddr() && r.Prefix.Addr().Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(r.Port))
}

// IsAddr reports whether r matches addresses (an IP or CIDR rule).
func (r Rule) IsAddr() bool { return r.Kind == KindIP || r.Kind == KindCIDR }

// portMatches: a rule without a port matches every port. port 0 stands for
// "no port known" (a DNS question): then only an allow rule may match
// regardless of its port; a block rule with a port blocks that port only and
// so does not block the name or address itself.
func (r Rule) portMatches(port uint16, allow bool) bool {
	if r.Port == 0 {
		return true
	}
	if port == 0 {
		return allow
	}
	return r.Port == port
}

// matchName reports whether r matches the normalized name.
func (r Rule) matchName(name string) bool {
	switch r.Kind {
	case KindName:
		return name == r.Name
	case KindWildcard:
		return strings.HasSuffix(name, "."+r.Name)
	}
	return false
}

// matchAddr reports whether r matches the unmapped address a.
func (r Rule) matchAddr(a netip.Addr) bool {
	return r.IsAddr() && r.Prefix.Contains(a)
}
