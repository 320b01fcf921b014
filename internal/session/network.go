package session

import (
	"fmt"
	"maps"
	"slices"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Network actions of the control protocol's "network" op.
const (
	NetAllow = "allow"
	NetBlock = "block"
	NetReset = "reset"
	NetList  = "list"
)

// RuleEntry is one egress rule as the control protocol reports it.
type RuleEntry struct {
	List string `json:"list"` // "allow" or "block"
	Rule string `json:"rule"`
	// LiftsFloor: an allow rule that opens private, loopback, link-local
	// or metadata addresses (egress.Rule.LiftsFloor), a loosening.
	LiftsFloor bool `json:"lifts_floor,omitempty"`
	// Loosening: why an allowed host opens more than package downloads
	// (egress.LoosenedBy): it takes uploads, or serves anyone's files.
	Loosening string `json:"loosening,omitempty"`
}

// NetworkView is what the control protocol reports of a session's network
// beside its rules: the mode and the routes that exist without a rule.
type NetworkView struct {
	Mode        string `json:"mode"`         // the network mode: "proxy"
	AgentPolicy string `json:"agent_policy"` // "deny": what no rule allows is refused; "allow"
	// PodPolicy is the containers' mode (Scope ScopePod).
	PodPolicy string `json:"pod_policy,omitempty"`
	// Implicit are the listeners inside the sandbox that the proxies
	// serve, and the auth proxy's routes.
	Implicit []ImplicitRoute `json:"implicit"`
}

// ImplicitRoute is one route that no rule made.
type ImplicitRoute struct {
	Addr string `json:"addr"` // inside the sandbox
	What string `json:"what"`
}

// networkView describes the session's network, or its containers'.
func (s *supervisor) networkView(scope string) *NetworkView {
	p := s.cfg.Job.Policy
	if scope == ScopePod {
		v := &NetworkView{Mode: p.Network, AgentPolicy: p.AgentPolicy, Implicit: []ImplicitRoute{
			{sandboxnet.PodDNSAddr, "the containers' DNS stub: answers the names their rules allow"},
			{sandboxnet.PodHTTPProxyAddr, "the containers' HTTP proxy (their HTTP_PROXY, HTTPS_PROXY)"},
			{sandboxnet.PodSOCKS5Addr, "the containers' SOCKS5 proxy (their ALL_PROXY)"},
		}}
		if s.podRules != nil {
			v.PodPolicy = string(s.podRules.Snapshot().Mode())
		}
		for _, r := range s.cfg.Job.Registries {
			v.Implicit = append(v.Implicit, ImplicitRoute{sandboxnet.RegistryProxyAddr, "the engine's pulls from " + r.String()})
		}
		return v
	}
	v := &NetworkView{Mode: p.Network, AgentPolicy: p.AgentPolicy, Implicit: []ImplicitRoute{
		{sandboxnet.DNSAddr, "DNS stub: answers the names the rules allow, NXDOMAIN for the rest"},
		{sandboxnet.HTTPProxyAddr, "HTTP proxy (HTTP_PROXY, HTTPS_PROXY): connections the rules allow"},
		{sandboxnet.SOCKS5Addr, "SOCKS5 proxy (ALL_PROXY): connections the rules allow"},
		{sandboxnet.CaptureAddr, "capture: every other TCP connection to an address outside, decided by the same rules"},
	}}
	routes := slices.Sorted(maps.Keys(s.cfg.Job.Auth))
	for _, name := range routes {
		v.Implicit = append(v.Implicit, ImplicitRoute{sandboxnet.AuthAddr,
			fmt.Sprintf("auth proxy: %s/%s -> %s, the real key put in for %s", sandboxnet.AuthURL, name, s.cfg.Job.Auth[name].Upstream, sandboxnet.DummyKey)})
	}
	return v
}

// network changes or lists the session's egress rules. A change applies to
// new connections at once and is recorded in the audit log.
func (s *supervisor) network(req Request) ([]RuleEntry, error) {
	if s.rules == nil {
		return nil, fmt.Errorf("session %s has no network proxy (network mode %q)", s.cfg.ID, s.cfg.Job.Policy.Network)
	}
	rules := s.rules
	switch req.Scope {
	case ScopeAgent:
	case ScopePod:
		if rules = s.podRules; rules == nil {
			return nil, fmt.Errorf("session %s has no container engine (start it with --containers)", s.cfg.ID)
		}
	default:
		return nil, fmt.Errorf("unknown network scope %q (known: pod)", req.Scope)
	}
	if req.Action != NetList {
		// The parser of --agent-allow: the same rules (and presets, @npm)
		// refused with the same line, which names the rule and the fix.
		parsed, err := egress.ParseRules(req.Target)
		if err != nil {
			return nil, err
		}
		var change func(egress.Rule) bool
		switch req.Action {
		case NetAllow:
			change = rules.Allow
		case NetBlock:
			change = rules.Block
		case NetReset:
			change = rules.Reset
		default:
			return nil, fmt.Errorf("unknown network action %q (known: allow, block, reset, list)", req.Action)
		}
		preset, isPreset := egress.LookupPreset(req.Target)
		for _, r := range parsed {
			fields := map[string]any{"action": req.Action, "rule": r.String(), "changed": change(r)}
			if req.Scope != ScopeAgent {
				fields["scope"] = req.Scope
			}
			if isPreset {
				fields["preset"] = egress.PresetPrefix + preset.Name
			}
			if req.Action == NetAllow && r.LiftsFloor() {
				fields["lifts_floor"] = true
			}
			if _, why := egress.LoosenedBy(r); why != "" && req.Action == NetAllow {
				fields["loosening"] = why
			}
			s.log(audit.EventNetworkRule, fields)
		}
	}
	var out []RuleEntry
	for _, e := range rules.List() {
		entry := RuleEntry{List: string(e.List), Rule: e.Rule.String()}
		if e.List == egress.ListAllow {
			entry.LiftsFloor = e.Rule.LiftsFloor()
			_, entry.Loosening = egress.LoosenedBy(e.Rule)
		}
		out = append(out, entry)
	}
	if out == nil {
		out = []RuleEntry{}
	}
	return out, nil
}
