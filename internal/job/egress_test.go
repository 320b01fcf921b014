package job

import (
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/policy"
)

// TestEgress: the proxy takes the rules the policy parsed; a bad agent
// policy stops the start.
func TestEgress(t *testing.T) {
	p := policy.Default("/w")
	p.AgentPolicy = "sometimes"
	if _, _, err := Egress(p, "abc123", false, nil); err == nil {
		t.Error("Egress accepted agent policy \"sometimes\"")
	}
	p = policy.Default("/w")
	for _, s := range []string{"*.example.com:443", "10.0.0.0/8"} {
		r, err := egress.ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		p.AgentAllow = append(p.AgentAllow, r)
	}
	px, rules, err := Egress(p, "abc123", false, nil)
	if err != nil || px == nil || len(rules.List()) != 2 {
		t.Fatalf("Egress = %v, %v", rules, err)
	}
	px.Close()
}

// TestPodRules: the containers' rules are the agent's plus the pods' own
// unless --pod-policy is given, and a copy either way.
func TestPodRules(t *testing.T) {
	rule := func(s string) egress.Rule {
		r, err := egress.ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	p := policy.Default("/w")
	p.AgentAllow = []egress.Rule{rule("agent.example")}
	p.AgentBlock = []egress.Rule{rule("bad.example")}
	pod := PodPolicy{Allow: []egress.Rule{rule("pod.example")}, Block: []egress.Rule{rule("agent.example:22")}}
	for _, c := range []struct {
		name   string
		policy string
		mode   egress.Mode
		want   []string
	}{
		{"the agent's and the pods'", "", egress.ModeDeny,
			[]string{"allow agent.example", "allow pod.example", "block agent.example:22", "block bad.example"}},
		{"their own, deny", "deny", egress.ModeDeny, []string{"allow pod.example", "block agent.example:22"}},
		{"their own, allow", "allow", egress.ModeAllow, []string{"allow pod.example", "block agent.example:22"}},
	} {
		pod.Policy = c.policy
		rules, err := PodRules(p, pod)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, e := range rules.List() {
			got = append(got, string(e.List)+" "+e.Rule.String())
		}
		if rules.Snapshot().Mode() != c.mode || strings.Join(got, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%s: mode %s, rules %q; want %s, %q", c.name, rules.Snapshot().Mode(), got, c.mode, c.want)
		}
	}
	// A change to the pods' rules is not the agent's.
	pod.Policy = ""
	rules, _ := PodRules(p, pod)
	rules.Allow(rule("more.example"))
	if len(p.AgentAllow) != 1 {
		t.Errorf("allowing for the pods changed the agent's rules: %v", p.AgentAllow)
	}
	pod.Policy = "sometimes"
	if _, err := PodRules(p, pod); err == nil {
		t.Error("PodRules accepted pod policy \"sometimes\"")
	}
}
