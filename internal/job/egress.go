package job

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"

	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/policy"
)

// Egress builds the egress proxy of a session from its policy: the rules,
// the resolver, and the host's own addresses, which the floor refuses like
// private ones. audit receives one event per connection and denial.
func Egress(p policy.Policy, session string, audit func(string, map[string]any)) (*egress.Proxy, *egress.Rules, error) {
	mode, err := egress.ParseMode(p.AgentPolicy)
	if err != nil {
		return nil, nil, err
	}
	parse := func(key string, in []string) ([]egress.Rule, error) {
		var out []egress.Rule
		for _, s := range in {
			r, err := egress.ParseRule(s)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", key, s, err)
			}
			out = append(out, r)
		}
		return out, nil
	}
	allow, err := parse("agent_allow", p.AgentAllow)
	if err != nil {
		return nil, nil, err
	}
	block, err := parse("agent_block", p.AgentBlock)
	if err != nil {
		return nil, nil, err
	}
	resolver, err := egress.NewResolver(p.Resolver)
	if err != nil {
		return nil, nil, fmt.Errorf("resolver %q: %w", p.Resolver, err)
	}
	rules := egress.NewRules(mode, allow, block)
	maxConns, _ := connCaps()
	px := egress.New(egress.Config{
		Session: session, Rules: rules, Resolver: resolver, HostAddrs: hostAddrs(), Audit: audit,
		MaxConns: maxConns,
	})
	return px, rules, nil
}

// ServeWith returns a Hooks.Serve that serves the listeners with px, and
// the auth listener with auth (nil: nobody listens there, so a connection
// to 127.0.0.1:2376 is refused).
func ServeWith(px *egress.Proxy, auth *authproxy.Proxy) func(Listeners) {
	return func(ls Listeners) {
		go px.ServeHTTPProxy(ls.HTTP)
		go px.ServeSOCKS5(ls.SOCKS5)
		go px.ServeDNSTCP(ls.DNSTCP)
		go px.ServeDNS(ls.DNSUDP)
		if auth != nil {
			go auth.Serve(ls.Auth)
		} else {
			ls.Auth.Close()
		}
	}
}

// hostAddrs are the addresses of the host's interfaces.
func hostAddrs() []netip.Addr {
	var out []netip.Addr
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

// LiftsFloor reports whether an allow rule names an address the floor
// would otherwise refuse (a private, loopback, link-local or metadata
// range): a loosening, printed and logged as such.
func LiftsFloor(rule string) bool {
	r, err := egress.ParseRule(rule)
	if err != nil || !r.IsAddr() {
		return false
	}
	a := r.Prefix.Addr().Unmap()
	return a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() ||
		netip.MustParsePrefix("100.64.0.0/10").Overlaps(r.Prefix) || r.Prefix.Bits() < 8
}

// AuthProxy builds the auth proxy of j, or nil when j has no routes.
func AuthProxy(j Job, audit func(string, map[string]any)) (*authproxy.Proxy, error) {
	if len(j.Auth) == 0 {
		return nil, nil
	}
	routes := map[string]authproxy.Route{}
	for name, r := range j.Auth {
		u, err := url.Parse(r.Upstream)
		if err != nil {
			return nil, fmt.Errorf("upstream of route %s: %w", name, err)
		}
		routes[name] = authproxy.Route{Upstream: u, Key: r.Key, Style: r.Style}
	}
	allow := map[string]bool{}
	for _, n := range j.AllowHTTP {
		allow[n] = true
	}
	_, maxConns := connCaps()
	return authproxy.New(authproxy.Config{Routes: routes, Audit: audit, AllowHTTP: allow, MaxConns: maxConns})
}
