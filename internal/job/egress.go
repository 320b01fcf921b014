package job

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/policy"
)

// Egress builds the egress proxy of a session from its policy: the rules
// (parsed when the policy loaded), the resolver, and the host's own addresses, which the floor refuses like
// private ones. audit receives one event per connection and denial.
// foreground: the rules cannot change while the run lasts (egress.Config).
func Egress(p policy.Policy, session string, foreground bool, audit func(string, map[string]any)) (*egress.Proxy, *egress.Rules, error) {
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
	addrs := hostAddrs()
	px := egress.New(egress.Config{
		Session: session, Foreground: foreground, Rules: rules, Resolver: resolver, HostAddrs: addrs, Audit: audit,
		CurrentHostAddrs: newLiveHostAddrs(addrs).get, MaxConns: maxConns,
	})
	return px, rules, nil
}

// PodRules are the rules of the containers' proxies (--containers), made
// once per session: with pod.Policy unset they start as the agent's (its
// mode, allow and block rules) with pod's rules added, since a container
// can read the workdir and must not be a way around the agent's allowlist;
// with pod.Policy set ("deny" or "allow") they are pod's own. Later changes
// to either set of rules leave the other alone.
func PodRules(p policy.Policy, pod PodPolicy) (*egress.Rules, error) {
	if pod.Policy != "" {
		mode, err := egress.ParseMode(pod.Policy)
		if err != nil {
			return nil, err
		}
		return egress.NewRules(mode, pod.Allow, pod.Block), nil
	}
	mode, err := egress.ParseMode(p.AgentPolicy)
	if err != nil {
		return nil, err
	}
	allow := append(append([]egress.Rule{}, p.AgentAllow...), pod.Allow...)
	block := append(append([]egress.Rule{}, p.AgentBlock...), pod.Block...)
	return egress.NewRules(mode, allow, block), nil
}

// EngineEgress builds the proxies of a container engine: the pods' (their
// traffic, under PodRules) and the registry proxy (the engine's own
// pulls, to j.Registries only). Each has its audit source.
func EngineEgress(j Job, event func(source string) func(string, map[string]any)) (pods *egress.Proxy, rules *egress.Rules, registry *egress.Proxy, err error) {
	resolver, err := egress.NewResolver(j.Policy.Resolver)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("resolver %q: %w", j.Policy.Resolver, err)
	}
	if rules, err = PodRules(j.Policy, j.Pod); err != nil {
		return nil, nil, nil, err
	}
	maxConns, _ := connCaps()
	addrs := hostAddrs()
	live := newLiveHostAddrs(addrs).get
	pods = egress.New(egress.Config{
		Session: j.ID, Rules: rules, Resolver: resolver, HostAddrs: addrs, CurrentHostAddrs: live, Audit: event(audit.SourcePod),
		MaxConns: maxConns,
	})
	var allow []egress.Rule
	for _, r := range j.Registries {
		allow = append(allow, r.Rule())
	}
	registry = egress.New(egress.Config{
		Session: j.ID, Rules: egress.NewRules(egress.ModeDeny, allow, nil), Resolver: resolver, HostAddrs: addrs,
		CurrentHostAddrs: live, Audit: event(audit.SourceRegistry), MaxConns: maxConns,
	})
	return pods, rules, registry, nil
}

// ServeEngineWith returns what serves the engine's listeners: the pods'
// with pods, the registry proxy's with registry.
func ServeEngineWith(pods, registry *egress.Proxy) func(engine.Listeners) {
	return func(ls engine.Listeners) {
		go pods.ServeHTTPProxy(ls.PodHTTP)
		go pods.ServeSOCKS5(ls.PodSOCKS5)
		go pods.ServeDNSTCP(ls.PodDNSTCP)
		go pods.ServeDNS(ls.PodDNSUDP)
		go registry.ServeHTTPProxy(ls.Registry)
	}
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

// hostAddrsMaxAge is how long the host's addresses read for a check are
// trusted: an address the host gains while a session runs (a rotated IPv6
// temporary address, a VPN, a new lease) is refused at most this late.
const hostAddrsMaxAge = time.Second

// liveHostAddrs reads the host's addresses again for the proxies' checks,
// at most once per hostAddrsMaxAge.
type liveHostAddrs struct {
	mu    sync.Mutex
	read  time.Time
	addrs []netip.Addr
}

// newLiveHostAddrs starts from addrs, just read.
func newLiveHostAddrs(addrs []netip.Addr) *liveHostAddrs {
	return &liveHostAddrs{read: time.Now(), addrs: addrs}
}

// get returns the host's addresses as they were at most hostAddrsMaxAge
// ago. A failed read returns none: the addresses at start still count
// (egress.Config.HostAddrs).
func (l *liveHostAddrs) get() []netip.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.read) >= hostAddrsMaxAge {
		l.read, l.addrs = time.Now(), hostAddrs()
	}
	return l.addrs
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
	var hosts map[string]string
	if j.GitHub {
		hosts = map[string]string{authproxy.GitHubHost: "github"}
	}
	_, maxConns := connCaps()
	return authproxy.New(authproxy.Config{Routes: routes, Audit: audit, AllowHTTP: allow, MaxConns: maxConns, HostRoutes: hosts})
}
