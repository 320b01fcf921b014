package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelp: the help tells the truth about the defaults and the modes, and
// a list flag takes one whole value per use, commas and all (issue 14).
func TestHelp(t *testing.T) {
	e := newEnv(t)
	run := e.run("", nil, "run", "--help")
	if run.code != 0 {
		t.Fatalf("run --help: exit %d\n%s", run.code, run.stderr)
	}
	flat := strings.Join(strings.Fields(run.stdout), " ") // the help is wrapped to the width
	for _, w := range []string{"--network proxy, the default", "127.0.0.1:3128", "--network none leaves loopback", "with -d", "in the foreground", "ctrl-] detaches", "--ro=PATH ", "repeatable", "The command to run"} {
		if !strings.Contains(flat, w) {
			t.Errorf("run --help lacks %q:\n%s", w, run.stdout)
		}
	}
	for _, bad := range []string{"no network but loopback", "--ro=PATH,", "--rw=PATH,", "--protect=PATH,", "--mask=PATH,", "--unmask=PATH,", "--env=NAME[=VALUE],"} {
		if strings.Contains(flat, bad) {
			t.Errorf("run --help says %q:\n%s", bad, run.stdout)
		}
	}
	for _, agent := range []string{"claude", "codex", "opencode", "gemini"} {
		r := e.run("", nil, agent, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Arguments for the agent") || strings.Contains(r.stdout, "The command to run") ||
			strings.Contains(r.stdout, "--ro=PATH,") || !strings.Contains(r.stdout, "--upstream=ROUTE=URL ") {
			t.Errorf("%s --help: exit %d; want the agent's arguments described and no comma lists:\n%s", agent, r.code, r.stdout)
		}
	}

	// A path with a comma is one path.
	dir := filepath.Join(e.home, "a,b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := e.run("", nil, "policy", "show", "--json", "--ro", dir, "--env", "X=1,2")
	if r.code != 0 || !strings.Contains(r.stdout, `"`+dir+`"`) || !strings.Contains(r.stdout, `"X=1,2"`) {
		t.Errorf("policy show --ro %s --env X=1,2: exit %d; want one path and one value:\n%s%s", dir, r.code, r.stdout, r.stderr)
	}
}
