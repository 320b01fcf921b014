package egress

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestPresets checks the table: sorted, every rule a name rule that
// ParseRule accepts and prints back as written, with a reason, no host twice
// in a preset, every HTTPS host on 443.
func TestPresets(t *testing.T) {
	if !slices.IsSortedFunc(presets, func(a, b Preset) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("presets are not sorted by name (LookupPreset searches them)")
	}
	for _, p := range presets {
		if p.Client == "" || len(p.Hosts) == 0 {
			t.Errorf("@%s: no client or no hosts", p.Name)
		}
		seen := map[Rule]bool{}
		for _, h := range p.Hosts {
			r, err := ParseRule(h.Rule)
			if err != nil {
				t.Errorf("@%s: %v", p.Name, err)
				continue
			}
			if r.Kind != KindName || r.Port == 0 || r.String() != h.Rule {
				t.Errorf("@%s: %q is not a name with a port written canonically (%v)", p.Name, h.Rule, r)
			}
			if r.Port != 443 && p.Name != "debian" {
				t.Errorf("@%s: %q: only apt uses anything but 443", p.Name, h.Rule)
			}
			if h.Why == "" {
				t.Errorf("@%s: %q has no reason", p.Name, h.Rule)
			}
			if seen[r] {
				t.Errorf("@%s: %q twice", p.Name, h.Rule)
			}
			seen[r] = true
		}
	}
}

func TestParseRules(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string // the expected refusal
	}{
		{in: "@npm", want: []string{"registry.npmjs.org:443"}},
		{in: " @PyPI ", want: []string{"pypi.org:443", "files.pythonhosted.org:443"}},
		{in: "@go", want: []string{"proxy.golang.org:443", "sum.golang.org:443", "storage.googleapis.com:443"}},
		{in: "@crates", want: []string{"index.crates.io:443", "static.crates.io:443"}},
		{in: "@rubygems", want: []string{"rubygems.org:443", "index.rubygems.org:443"}},
		{in: "@maven", want: []string{"repo.maven.apache.org:443", "repo1.maven.org:443"}},
		{in: "@debian", want: []string{"deb.debian.org:80", "deb.debian.org:443", "security.debian.org:80", "security.debian.org:443"}},
		{in: "@github", want: []string{"github.com:443", "api.github.com:443", "codeload.github.com:443",
			"raw.githubusercontent.com:443", "objects.githubusercontent.com:443", "release-assets.githubusercontent.com:443"}},
		{in: "example.com:443", want: []string{"example.com:443"}},
		{in: "@nmp", wantErr: `"@nmp" is not a network rule: no such preset; write one of @crates, @debian, @github, @go, @maven, @npm, @pypi, @rubygems`},
		{in: "@", wantErr: `"@" is not a network rule: no such preset`},
		{in: "@npm:443", wantErr: `"@npm:443" is not a network rule: no such preset`},
		{in: "a b", wantErr: `"a b" is not a network rule`},
	}
	for _, tt := range tests {
		rules, err := ParseRules(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidRule) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseRules(%q) = %v, %v; want one line starting %q", tt.in, rules, err, tt.wantErr)
			}
			continue
		}
		var got []string
		for _, r := range rules {
			got = append(got, r.String())
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseRules(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// ParseRule alone never expands: a preset is not one rule.
	if _, err := ParseRule("@npm"); err == nil {
		t.Error(`ParseRule("@npm") accepted a preset`)
	}
}

func TestLoosenedBy(t *testing.T) {
	for _, tt := range []struct {
		rule, host string
	}{
		{"raw.githubusercontent.com:443", "raw.githubusercontent.com"},
		{"raw.githubusercontent.com", "raw.githubusercontent.com"}, // by hand, any port
		{"*.githubusercontent.com", "raw.githubusercontent.com"},
		{"storage.googleapis.com:443", "storage.googleapis.com"},
		{"registry.npmjs.org:443", "registry.npmjs.org"},
		{"github.com:22", "github.com"},
		{"pypi.org:443", ""},
		{"files.pythonhosted.org", ""},
		{"proxy.golang.org:443", ""},
		{"*.npmjs.org", "registry.npmjs.org"},
		{"10.0.0.0/8", ""},
		{"example.com", ""},
	} {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		host, why := LoosenedBy(r)
		if host != tt.host || (host != "") != (why != "") {
			t.Errorf("LoosenedBy(%s) = %q, %q; want host %q", tt.rule, host, why, tt.host)
		}
	}
}
