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

// Egress builds the egress proxy of a session from its policy: the rules
// (parsed when the policy loaded), the resolver, and the host's own addresses, which the floor refuses like
// private ones. audit receives one event per connection and denial.
func Egress(p policy.Policy, session string, audit func(string, map[string]any)) (*egress.Proxy, *egress.Rules, error) {
	mode, err := egress.ParseMode(p.AgentPolicy)
	if err != nil {
		return nil, nil, err
	}
	resolver, err := egress.NewResolver(p.Resolver)
	if err != nil {
		return nil, nil, fmt.Errorf("resolver %q: %w", p.Resolver, err)
	}
	rules := egress.NewRules(mode, p.AgentAllow, p.AgentBlock)
	maxConns, _ := connCaps()
	px := egress.New(egress.Config{
		Session: session, Rules: rules, Resolver: resolver, HostAddrs: hostAddrs(), Audit: audit,
		MaxConns: maxConns,
	})
	return px, rules, nil
}

// ServeWith returns what serves the listeners init made (Services.Run hands
// them over): the proxy listeners with px, and the auth listener with auth
// (nil: nobody listens there, so a connection to sandboxnet.AuthAddr is
// refused).
func ServeWith(px *egress.Proxy, auth *authproxy.Proxy) func(Listeners) {
	return func(ls Listeners) {
		go px.ServeHTTPProxy(ls.HTTP)
		go px.ServeSOCKS5(ls.SOCKS5)
		go px.ServeDNSTCP(ls.DNSTCP)
		go px.ServeDNS(ls.DNSUDP)
		for _, l := range ls.Capture {
			go px.ServeCapture(l)
		}
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
