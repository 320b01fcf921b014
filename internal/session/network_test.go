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

// TestNetworkView: the answer names the mode and the routes no rule made
// (the DNS stub, the proxies, each auth proxy route with its upstream),
// never a key.
func TestNetworkView(t *testing.T) {
	s := &supervisor{}
	s.cfg.Job.Policy.Network, s.cfg.Job.Policy.AgentPolicy = "proxy", "deny"
	s.cfg.Job.Auth = map[string]job.AuthRoute{"openai": {Upstream: "https://api.openai.com", Key: "sk-real-key"}}
	v := s.networkView()
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
