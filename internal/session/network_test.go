package session

import (
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

type events []map[string]any

func (e *events) Log(_, event string, f map[string]any) error {
	if event == audit.EventNetworkRule {
		*e = append(*e, f)
	}
	return nil
}
func (e *events) Ended() <-chan struct{} { return nil }
func (e *events) EndReason() string      { return "" }

// TestNetworkRules: a rule added at run time goes through the parser of
// --agent-allow, with its error line, and one that lifts the floor is marked
// so in the answer and in the audit log.
func TestNetworkRules(t *testing.T) {
	var log events
	s := &supervisor{audit: &log, rules: egress.NewRules(egress.ModeDeny, nil, nil)}
	_, want := egress.ParseRule("bad host!")
	if _, err := s.network(Request{Action: NetAllow, Target: "bad host!"}); err == nil || err.Error() != want.Error() {
		t.Errorf("allow a bad rule: %v, want %v", err, want)
	}
	for _, tt := range []struct {
		action, target string
		lifts          bool
	}{
		{NetAllow, "169.0.0.0/8", true},
		{NetAllow, "api.example.com", false},
		{NetBlock, "10.0.0.0/8", false}, // a block rule never loosens
	} {
		rules, err := s.network(Request{Action: tt.action, Target: tt.target})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rules {
			if r.Rule == tt.target {
				found = true
				if r.LiftsFloor != tt.lifts {
					t.Errorf("%s %s: LiftsFloor %v, want %v", tt.action, tt.target, r.LiftsFloor, tt.lifts)
				}
			}
		}
		last := log[len(log)-1]
		if !found || last["rule"] != tt.target || (last["lifts_floor"] == true) != tt.lifts {
			t.Errorf("%s %s: rules %v, event %v", tt.action, tt.target, rules, last)
		}
	}
}

// TestNetworkPreset: `network agent allow -s ID @github` adds every rule of
// the preset, one audit event each naming the preset, and marks the hosts
// that are loosenings; an unknown preset is the parser's line; reset of the
// preset removes what it added.
func TestNetworkPreset(t *testing.T) {
	var log events
	s := &supervisor{audit: &log, rules: egress.NewRules(egress.ModeDeny, nil, nil)}
	_, want := egress.ParseRules("@nope")
	if _, err := s.network(Request{Action: NetAllow, Target: "@nope"}); err == nil || err.Error() != want.Error() {
		t.Errorf("allow an unknown preset: %v, want %v", err, want)
	}
	gh, _ := egress.LookupPreset("@github")
	rules, err := s.network(Request{Action: NetAllow, Target: "@github"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(gh.Hosts) || len(log) != len(gh.Hosts) {
		t.Fatalf("rules %v, events %v; want the %d hosts of @github", rules, log, len(gh.Hosts))
	}
	for i, r := range rules {
		if r.Loosening == "" || log[i]["preset"] != "@github" || log[i]["loosening"] == nil || log[i]["changed"] != true {
			t.Errorf("rule %v, event %v: want a loosening from @github", r, log[i])
		}
	}
	if rules, _ = s.network(Request{Action: NetAllow, Target: "@pypi"}); len(rules) != len(gh.Hosts)+2 {
		t.Errorf("after @pypi: %v", rules)
	}
	for _, r := range rules {
		if r.Rule == "pypi.org:443" && r.Loosening != "" {
			t.Errorf("pypi.org marked a loosening: %v", r)
		}
	}
	if rules, _ = s.network(Request{Action: NetReset, Target: "@github"}); len(rules) != 2 {
		t.Errorf("after reset @github: %v, want the 2 rules of @pypi", rules)
	}
}

// TestNetworkView: the answer names the mode and the routes no rule made
// (the DNS stub, the proxies, each auth proxy route with its upstream),
// never a key.
func TestNetworkView(t *testing.T) {
	s := &supervisor{}
	s.cfg.Job.Policy.Network, s.cfg.Job.Policy.AgentPolicy = "proxy", "deny"
	s.cfg.Job.Auth = map[string]job.AuthRoute{"openai": {Upstream: "https://api.openai.com", Key: "sk-real-key"}}
	v := s.networkView(ScopeAgent)
	if v.Mode != "proxy" || v.AgentPolicy != "deny" {
		t.Errorf("mode %q, agent policy %q", v.Mode, v.AgentPolicy)
	}
	var dns, auth bool
	for _, r := range v.Implicit {
		dns = dns || r.Addr == sandboxnet.DNSAddr
		auth = auth || r.Addr == sandboxnet.AuthAddr && strings.Contains(r.What, "/openai -> https://api.openai.com")
		if strings.Contains(r.What, "sk-real-key") {
			t.Errorf("an implicit route shows the real key: %q", r.What)
		}
	}
	if !dns || !auth {
		t.Errorf("implicit routes lack the DNS stub (%v) or the auth route (%v): %+v", dns, auth, v.Implicit)
	}
}
