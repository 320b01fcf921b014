package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Decision is the outcome of checking one destination. The proxies act on it
// and report it; nothing in it is re-derived later (the dialer dials Addrs,
// never the name).
type Decision struct {
	Allowed bool
	// Host is the destination as it was checked: the normalized name, or
	// the address for an IP literal; the raw request when it was invalid.
	Host string
	Port uint16
	// Addrs are the checked addresses to dial, in order (Allowed only).
	Addrs []netip.Addr
	// Rule is what decided: a rule as the user writes it ("*.example.com"),
	// "allow mode", "deny mode", "floor" or "invalid".
	Rule string
	// Reason says why it was denied, for the agent.
	Reason string
	// Fix is the command a human runs to allow it ("" when no command
	// would help, as for an invalid name).
	Fix string
	// Unresolved: the name is allowed but did not resolve (Err says why);
	// a denial of a different kind (SOCKS5 reply 4, HTTP 502).
	Unresolved bool
	Err        error
}

// Target returns host:port as a dialer writes it.
func (d Decision) Target() string {
	return net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port)))
}

// Decider turns "host:port" into a Decision: rules, then resolution, then
// the floor on every resolved address. The HTTP proxy, the SOCKS5 server and
// the DNS stub share it, and so will a transparent mode: it needs only a host
// (SNI or Host header, or the original destination address) and a port.
type Decider struct {
	Rules     *Rules
	Resolver  *Resolver
	HostAddrs []netip.Addr
	// CurrentHostAddrs, when set, returns the host's addresses as they
	// are now, checked besides HostAddrs: an address the host gains
	// while a session runs (a rotated IPv6 temporary address, a VPN, a
	// new lease) is the host as much as one it had at start.
	CurrentHostAddrs func() []netip.Addr
	Session          string // named in the Fix commands
	// Foreground: the Fix is a flag of the next run (Config.Foreground).
	Foreground bool
}

// Decide checks host (a name or an IP literal, IPv6 without brackets) at port
// against the rules as they are now, resolving a name with the Resolver.
func (d *Decider) Decide(ctx context.Context, host string, port uint16) Decision {
	snap := d.Rules.Snapshot()
	if a, err := netip.ParseAddr(host); err == nil {
		return d.decideAddr(snap, a, port)
	}
	dec := d.decideName(snap, host, port)
	if !dec.Allowed {
		return dec
	}
	addrs, err := d.Resolver.LookupAddrs(ctx, dec.Host)
	if err != nil {
		dec.Allowed, dec.Unresolved, dec.Err = false, true, err
		dec.Reason = "does not resolve: " + err.Error()
		return dec
	}
	var first Decision
	for _, a := range addrs {
		c := d.checkAddr(snap, netip.AddrPortFrom(a.Unmap(), port))
		if c.Allowed {
			dec.Addrs = append(dec.Addrs, a.Unmap())
		} else if first.Reason == "" {
			first = c
		}
	}
	if len(dec.Addrs) == 0 {
		if first.Reason == "" { // no address at all
			dec.Allowed, dec.Unresolved = false, true
			dec.Reason = "does not resolve: no address"
			return dec
		}
		dec.Allowed, dec.Rule, dec.Fix = false, first.Rule, first.Fix
		dec.Reason = "resolves to " + first.Host + ", " + strings.TrimPrefix(first.Reason, first.Host+" is ")
	}
	return dec
}

// DecideName is the rules stage for a name alone, with no port and no
// resolution: the DNS stub asks it before anything goes upstream.
func (d *Decider) DecideName(name string) Decision {
	return d.decideName(d.Rules.Snapshot(), name, 0)
}

// FilterAddrs keeps the addresses that a connection to an unknown port
// could use: not blocked by an IP rule without a port, and outside the floor
// unless an IP allow rule names them.
func (d *Decider) FilterAddrs(addrs []netip.Addr) []netip.Addr {
	snap := d.Rules.Snapshot()
	var out []netip.Addr
	for _, a := range addrs {
		if d.checkAddr(snap, netip.AddrPortFrom(a.Unmap(), 0)).Allowed {
			out = append(out, a)
		}
	}
	return out
}

func (d *Decider) decideName(snap *Snapshot, host string, port uint16) Decision {
	name, err := NormalizeName(host)
	if err != nil {
		return Decision{Host: host, Port: port, Rule: "invalid", Reason: "not a valid hostname: " + err.Error()}
	}
	dec := Decision{Host: name, Port: port}
	if r, ok := snap.blockedName(name, port); ok {
		return d.blocked(dec, r)
	}
	if r, ok := snap.allowedName(name, port); ok {
		dec.Allowed, dec.Rule = true, r.String()
		return dec
	}
	if snap.Mode() == ModeAllow {
		dec.Allowed, dec.Rule = true, "allow mode"
		return dec
	}
	dec.Rule, dec.Reason = "deny mode", "not in the allowlist (deny mode)"
	dec.Fix = d.command("allow", name)
	return dec
}

func (d *Decider) decideAddr(snap *Snapshot, a netip.Addr, port uint16) Decision {
	if a.Zone() != "" {
		return Decision{Host: a.String(), Port: port, Rule: "invalid", Reason: "an address with a zone is not a destination"}
	}
	dec := d.checkAddr(snap, netip.AddrPortFrom(a.Unmap(), port))
	if !dec.Allowed || dec.Rule != "" {
		return dec
	}
	if snap.Mode() == ModeAllow {
		dec.Rule = "allow mode"
		return dec
	}
	dec.Allowed, dec.Addrs = false, nil
	dec.Rule, dec.Reason = "deny mode", "not in the allowlist (deny mode)"
	dec.Fix = d.command("allow", dec.Host)
	return dec
}

// checkAddr applies the address rules and the floor to one unmapped
// address. Allowed with an empty Rule means no rule named it (the mode
// decides, for an IP literal).
func (d *Decider) checkAddr(snap *Snapshot, ap netip.AddrPort) Decision {
	a := ap.Addr()
	dec := Decision{Host: a.String(), Port: ap.Port()}
	if r, ok := snap.blockedAddr(ap); ok {
		return d.blocked(dec, r)
	}
	if r, ok := snap.allowedAddr(ap); ok {
		dec.Allowed, dec.Rule, dec.Addrs = true, r.String(), []netip.Addr{a}
		return dec
	}
	if why := floorReason(a, d.hostAddrs()); why != "" {
		dec.Rule, dec.Reason = "floor", a.String()+" is "+why
		dec.Fix = d.command("allow", a.String())
		return dec
	}
	dec.Allowed, dec.Addrs = true, []netip.Addr{a}
	return dec
}

// hostAddrs are the host's own addresses: those at start and, with
// CurrentHostAddrs, those it has now.
func (d *Decider) hostAddrs() []netip.Addr {
	if d.CurrentHostAddrs == nil {
		return d.HostAddrs
	}
	return append(slices.Clip(d.HostAddrs), d.CurrentHostAddrs()...)
}

func (d *Decider) blocked(dec Decision, r Rule) Decision {
	dec.Rule, dec.Reason = r.String(), "blocked by rule "+r.String()
	dec.Fix = d.command("reset", r.String())
	return dec
}

// command is the control command that changes target, quoted for a shell;
// for a foreground run, what to change in the next one.
func (d *Decider) command(verb, target string) string {
	if d.Foreground {
		if verb == "allow" {
			return fmt.Sprintf("stockade run --agent-allow %s … (again: a foreground run's rules are fixed while it runs)", shellQuote(target))
		}
		return fmt.Sprintf("stockade run without the agent_block rule %s … (again: a foreground run's rules are fixed while it runs)", shellQuote(target))
	}
	return fmt.Sprintf("stockade network agent %s -s %s %s", verb, shellQuote(d.Session), shellQuote(target))
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DecideAt checks a connection to addr that a name stands for (the name
// the DNS stub answered addr for): the name's rules at the port, then the
// address rules and the floor on addr itself, which is the only address
// dialed. Nothing is resolved again: addr came from the resolver.
func (d *Decider) DecideAt(name string, addr netip.AddrPort) Decision {
	snap := d.Rules.Snapshot()
	dec := d.decideName(snap, name, addr.Port())
	if !dec.Allowed {
		return dec
	}
	c := d.checkAddr(snap, netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port()))
	if !c.Allowed {
		dec.Allowed, dec.Rule, dec.Fix = false, c.Rule, c.Fix
		dec.Reason = "resolves to " + c.Host + ", " + strings.TrimPrefix(c.Reason, c.Host+" is ")
		return dec
	}
	dec.Addrs = []netip.Addr{addr.Addr().Unmap()}
	return dec
}
