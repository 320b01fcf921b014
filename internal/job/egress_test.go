package job

import (
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
