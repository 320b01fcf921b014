package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProfiles(t *testing.T) {
	for name, p := range Profiles {
		if p.Name != name || p.Binary == "" || p.Package == "" || len(p.Routes) == 0 {
			t.Errorf("profile %q is incomplete: %+v", name, p)
		}
	}
	if got := strings.Join(Names(), ","); got != "claude,codex,gemini,opencode" {
		t.Errorf("Names() = %s", got)
	}
	if args := Profiles["claude"].Args("G"); len(args) != 2 || args[1] != "G" {
		t.Errorf("claude guide args = %q", args)
	}
}

// TestGuide: the guide says only what is true of the policy.
func TestGuide(t *testing.T) {
	deny := Guide(GuideInput{Session: "abc123", Workdir: "/p", Home: "/h", Network: "proxy", Capture: true, Mode: "deny", Allowed: []string{"api.example.com"}, Routes: []string{"anthropic"}})
	for _, want := range []string{"/p", "only these hosts are allowed: api.example.com", "stockade network agent allow -s abc123 HOST", "placeholder", "/run/stockade/denials",
		"a direct TCP connection is captured", "ECONNRESET", "leaves a capture line"} {
		if !strings.Contains(deny, want) {
			t.Errorf("deny guide lacks %q:\n%s", want, deny)
		}
	}
	// With capture a direct connection fails with ENETUNREACH only where
	// the kernel refused the rules (the guide is written before that is
	// known): the guide says so as that case, never as the rule.
	if !strings.Contains(deny, "Only where this machine's kernel refused the capture rules does it fail at once with ENETUNREACH") {
		t.Errorf("the guide of a sandbox with capture does not say what a refused capture looks like:\n%s", deny)
	}
	if strings.Count(deny, "ENETUNREACH") != 1 {
		t.Errorf("the guide of a sandbox with capture speaks of ENETUNREACH other than as the refused case:\n%s", deny)
	}
	// Without capture (--containers) it does, and leaves no line.
	noCapture := Guide(GuideInput{Session: "abc123", Workdir: "/p", Home: "/h", Network: "proxy", Mode: "deny"})
	for _, want := range []string{"cannot connect out", "ENETUNREACH", "leaves no line"} {
		if !strings.Contains(noCapture, want) {
			t.Errorf("the guide without capture lacks %q:\n%s", want, noCapture)
		}
	}
	if strings.Contains(noCapture, "captured") {
		t.Errorf("the guide without capture says connections are captured:\n%s", noCapture)
	}
	none := Guide(GuideInput{Session: "abc123", Workdir: "/p", Home: "/h", Network: "none"})
	if strings.Contains(none, "network agent allow") || strings.Contains(none, "/run/stockade/denials") || !strings.Contains(none, "Network: none") {
		t.Errorf("offline guide offers a way out:\n%s", none)
	}
}

// TestFind: a script install is found with its package and interpreter;
// a missing one names the npm package.
func TestFind(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "lib", "node_modules", "fake-agent")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"fake-agent"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "bin", "cli.js"), []byte("#!/usr/bin/env sh\necho hi\n"), 0o755)
	bin := filepath.Join(root, "bin")
	os.MkdirAll(bin, 0o755)
	os.Symlink(filepath.Join(pkg, "bin", "cli.js"), filepath.Join(bin, "fake"))
	p := Profile{Name: "fake", Binary: "fake", Package: "fake-agent"}
	in, err := Find(p, bin+":/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	if in.Command != filepath.Join(pkg, "bin", "cli.js") || in.Mounts[0] != pkg || len(in.PathDirs) != 1 {
		t.Errorf("Find = %+v", in)
	}
	if _, err := Find(p, "/nonexistent"); err == nil || !strings.Contains(err.Error(), "npm install -g fake-agent") {
		t.Errorf("missing agent: %v", err)
	}
}

// TestHeadlessTable: every profile says how it runs without a terminal,
// and the table's answers hold for the forms the docs show.
func TestHeadlessTable(t *testing.T) {
	for name := range Profiles {
		if _, ok := HeadlessArgs[name]; !ok {
			t.Errorf("profile %s has no row in HeadlessArgs", name)
		}
	}
	for name := range HeadlessArgs {
		if _, ok := Profiles[name]; !ok {
			t.Errorf("HeadlessArgs has a row for %s, which is no profile", name)
		}
	}
	tests := []struct {
		agent    string
		args     []string
		stdinTTY bool
		want     bool
	}{
		{"claude", nil, true, false},
		{"claude", nil, false, false},
		{"claude", []string{"fix the tests"}, false, false},
		{"claude", []string{"-p", "fix the tests"}, false, true},
		{"claude", []string{"--model", "opus", "--print", "hi"}, false, true},
		{"claude", []string{"--version"}, false, true},
		{"claude", []string{"mcp", "list"}, false, true},
		{"claude", []string{"attach", "x"}, false, false},
		{"codex", []string{"exec", "hi"}, false, true},
		{"codex", []string{"hi"}, false, false},
		{"codex", []string{"resume", "--last"}, false, false},
		{"gemini", nil, false, true}, // the prompt comes on stdin
		{"gemini", nil, true, false},
		{"gemini", []string{"--prompt=hi"}, true, true},
		{"opencode", []string{"run", "hi"}, false, true},
		{"opencode", []string{"myproject"}, false, false},
		{"opencode", []string{"--", "run"}, false, false},
	}
	for _, tt := range tests {
		if got := HeadlessArgs[tt.agent].Runs(tt.args, tt.stdinTTY); got != tt.want {
			t.Errorf("%s %q (stdin a terminal: %v): runs headless %v, want %v", tt.agent, tt.args, tt.stdinTTY, got, tt.want)
		}
	}
}
