package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestCandidates: what `stockade __complete` offers at the cursor, for
// each kind of word the scripts ask about.
func TestCandidates(t *testing.T) {
	parser, err := kong.New(&root{}, kong.Name("stockade"))
	if err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		return []string{"3f9a1c\trunning, sleep 100", "3f0000\texited, true", "b00b00\trunning, make"}
	}
	tests := []struct {
		words   []string
		want    []string // among the candidates (before the tab)
		notWant []string
	}{
		{[]string{""}, []string{"run", "claude", "attach", "network", "completion"}, []string{"__complete"}},
		{[]string{"at"}, []string{"attach"}, []string{"run"}},
		{[]string{"network", ""}, []string{"agent", "list"}, []string{"run"}},
		{[]string{"network", "agent", "a"}, []string{"allow"}, []string{"block"}},
		{[]string{"attach", "-s", ""}, []string{"3f9a1c", "3f0000", "b00b00"}, nil},
		{[]string{"logs", "--session", "3f"}, []string{"3f9a1c", "3f0000"}, []string{"b00b00"}},
		{[]string{"stop", "--session=3f9"}, []string{"--session=3f9a1c"}, []string{"--session=3f0000"}},
		{[]string{"network", "list", "-s", ""}, []string{"b00b00"}, nil},
		{[]string{"attach", "--session", "=", "b0"}, []string{"b00b00"}, []string{"3f9a1c"}}, // bash's split of --session=b0
		{[]string{"attach", "--session", "="}, []string{"b00b00", "3f9a1c"}, nil},
		{[]string{"run", "--me"}, []string{"--memory"}, []string{"--ro"}},
		{[]string{"run", "-"}, []string{"--tripwire", "-d", "--agent-allow"}, nil},
		{[]string{"claude", "--"}, []string{"--upstream", "--env-file"}, nil},
		{[]string{"run", "--network", ""}, []string{"proxy", "none"}, nil},
		{[]string{"run", "--ro", ""}, []string{":file"}, nil},
		{[]string{"run", "--workdir", ""}, []string{":dir"}, nil},
		{[]string{"run", "--memory", "4g", "--", ""}, []string{":command"}, nil},
		{[]string{"run", "--", "make", ""}, []string{":file"}, nil},
		{[]string{"run", "-d", "--log-level", "d"}, []string{"debug"}, []string{"info"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, []string{"run"}},
	}
	for _, tt := range tests {
		var got []string
		for _, c := range candidates(parser.Model.Node, tt.words, ids) {
			name, _, _ := strings.Cut(c, "\t")
			got = append(got, name)
		}
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("stockade %q: %q missing from %q", tt.words, w, got)
			}
		}
		for _, w := range tt.notWant {
			if slices.Contains(got, w) {
				t.Errorf("stockade %q: %q offered: %q", tt.words, w, got)
			}
		}
	}
}
