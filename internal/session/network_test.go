package session

import (
	"testing"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/egress"
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
