package cli

import (
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/policy"
)

// TestFloorLoosenings: an allow rule is a LOOSENED line exactly when
// egress says it lifts the floor, in proxy mode; a review found
// 169.0.0.0/8, which holds the metadata address, printed nothing.
func TestFloorLoosenings(t *testing.T) {
	for _, tt := range []struct {
		rule, network string
		want          bool
	}{
		{"169.0.0.0/8", "proxy", true},
		{"172.0.0.0/8", "proxy", true},
		{"192.0.0.0/8", "proxy", true},
		{"64:ff9b::a00:0/104", "proxy", true},
		{"fec0::/10", "proxy", true},
		{"10.0.0.5:5432", "proxy", true},
		{"93.184.216.0/24", "proxy", false},
		{"api.example.com", "proxy", false},
		{"169.0.0.0/8", "none", false}, // nothing leaves the sandbox
	} {
		l, err := policy.FromFlags(policy.Flags{AgentAllow: []string{tt.rule}, Network: &tt.network}, "/")
		if err != nil {
			t.Fatal(err)
		}
		r, err := policy.Resolve("/home/u/p", l)
		if err != nil {
			t.Fatal(err)
		}
		e := enforcementOf(r, "/home/u", cgroup.Report{})
		want := "agent_allow " + tt.rule + ": " + floorLifted
		if got := strings.Join(e.Loosenings, "\n"); strings.Contains(got, want) != tt.want {
			t.Errorf("--agent-allow %s, network %s: loosenings %q, want the floor line %v", tt.rule, tt.network, e.Loosenings, tt.want)
		}
	}
}

// TestPresetLoosenings: a preset prints a LOOSENED line for each host it
// allows that takes uploads or serves anyone's files, and none for the
// others; the same host written by hand prints the same line.
func TestPresetLoosenings(t *testing.T) {
	for _, tt := range []struct {
		allow string
		want  []string // the rules with a LOOSENED line
	}{
		{"@github", []string{"github.com:443", "api.github.com:443", "codeload.github.com:443", "raw.githubusercontent.com:443",
			"objects.githubusercontent.com:443", "release-assets.githubusercontent.com:443"}},
		{"@go", []string{"storage.googleapis.com:443"}},
		{"@npm", []string{"registry.npmjs.org:443"}},
		{"@pypi", nil},
		{"@debian", nil},
		{"raw.githubusercontent.com", []string{"raw.githubusercontent.com"}},
	} {
		l, err := policy.FromFlags(policy.Flags{AgentAllow: []string{tt.allow}}, "/")
		if err != nil {
			t.Fatal(err)
		}
		r, err := policy.Resolve("/home/u/p", l)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range enforcementOf(r, "/home/u", cgroup.Report{}).Loosenings {
			if rule, ok := strings.CutPrefix(line, "agent_allow "); ok {
				rule = rule[:strings.Index(rule, ": ")]
				if tt.allow[0] == '@' && !strings.HasSuffix(rule, " (preset "+tt.allow+")") {
					t.Errorf("--agent-allow %s: %q does not name the preset", tt.allow, line)
				}
				got = append(got, strings.TrimSuffix(rule, " (preset "+tt.allow+")"))
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("--agent-allow %s: LOOSENED for %q, want %q", tt.allow, got, tt.want)
		}
	}
}
