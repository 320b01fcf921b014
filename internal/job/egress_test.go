package job

import (
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestLiftsFloor: only an allow rule naming a floor address is a loosening.
func TestLiftsFloor(t *testing.T) {
	for _, tt := range []struct {
		rule string
		want bool
	}{
		{"api.example.com", false}, {"*.example.com", false}, {"198.51.100.7", false},
		{"10.0.0.5", true}, {"192.168.0.0/16:5432", true}, {"127.0.0.1", true},
		{"169.254.169.254", true}, {"100.64.0.1", true}, {"0.0.0.0/0", true}, {"fd00::1", true},
		{"not a rule!", false},
	} {
		if got := LiftsFloor(tt.rule); got != tt.want {
			t.Errorf("LiftsFloor(%q) = %v, want %v", tt.rule, got, tt.want)
		}
	}
}

// TestEgressRefusesBadRules: a rule the proxy cannot parse stops the start,
// naming the key and the rule.
func TestEgressRefusesBadRules(t *testing.T) {
	p := policy.Default("/w")
	p.AgentAllow = []string{"api.example.com", "bad host!"}
	if _, _, err := Egress(p, "abc123", nil); err == nil || !strings.Contains(err.Error(), `agent_allow "bad host!"`) {
		t.Errorf("Egress with a bad rule: %v", err)
	}
	p = policy.Default("/w")
	p.AgentPolicy = "sometimes"
	if _, _, err := Egress(p, "abc123", nil); err == nil {
		t.Error("Egress accepted agent policy \"sometimes\"")
	}
	p = policy.Default("/w")
	p.AgentAllow = []string{"*.example.com:443", "10.0.0.0/8"}
	px, rules, err := Egress(p, "abc123", nil)
	if err != nil || px == nil || len(rules.List()) != 2 {
		t.Fatalf("Egress = %v, %v", rules, err)
	}
	px.Close()
}
