package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/agent"
)

// TestUsage: a bare stockade prints the command overview, and a command
// line that names nothing to run exits 2 with one line naming the mistake
// and the help to read, in every subcommand (issue 14); nothing is set up.
func TestUsage(t *testing.T) {
	e := newEnv(t)
	r := e.run("", nil)
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "Commands:") ||
		!strings.Contains(r.stderr, "attach --session=ID") || !strings.Contains(r.stderr, `"stockade <command> --help"`) {
		t.Errorf("bare stockade: exit %d, stdout %q; want 2 and the usage on stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"bogus"}, []string{"bogus", "see stockade --help"}},
		{[]string{"run"}, []string{"no command given", "stockade run [flags] -- CMD"}},
		{[]string{"run", "--"}, []string{"no command given"}},
		{[]string{"run", "--memory", "4", "--", "true"}, []string{`--memory: "4" is a size without a unit`, `"4g"`}},
		{[]string{"run", "--bogus", "--", "true"}, []string{"--bogus", "see stockade run --help"}},
		{[]string{"claude", "--bogus"}, []string{"--bogus", "see stockade claude --help"}},
		{[]string{"run", "--slurm", "--slurm-scope", "wide", "--", "true"}, []string{`--slurm-scope "wide"`, "session, project or user"}},
		{[]string{"run", "--slurm-scope", "user", "--", "true"}, []string{"--slurm-scope needs --slurm"}},
		{[]string{"run", "--slurm", "--network", "none", "--", "true"}, []string{"--slurm needs --network proxy"}},
		{[]string{"list", "extra"}, []string{"extra", "see stockade list --help"}},
		{[]string{"attach"}, []string{"--session", "see stockade attach --help"}},
		{[]string{"stop"}, []string{"--session", "see stockade stop --help"}},
		{[]string{"stop", "-s", "abc", "--timeout", "zz"}, []string{`"zz"`, "see stockade stop --help"}},
		{[]string{"delete"}, []string{"--session", "see stockade delete --help"}},
		{[]string{"logs"}, []string{"--session", "see stockade logs --help"}},
		{[]string{"network"}, []string{"see stockade network --help"}},
		{[]string{"network", "list"}, []string{"--session", "see stockade network list --help"}},
		{[]string{"network", "agent", "allow", "-s", "abc"}, []string{"<target>", "see stockade network agent allow --help"}},
		{[]string{"prune", "extra"}, []string{"extra", "see stockade prune --help"}},
		{[]string{"doctor", "--memory", "4"}, []string{`--memory: "4"`}},
		{[]string{"policy"}, []string{"see stockade policy --help"}},
		{[]string{"policy", "show", "--network", "wide"}, []string{"--network", `"wide"`}},
		{[]string{"version", "extra"}, []string{"extra", "see stockade version --help"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			before := snapshot(t, e.home)
			r := e.run("", nil, tt.args...)
			if r.code != 2 || r.stdout != "" || len(stderrLines(r.stderr)) != 1 {
				t.Errorf("exit %d, stdout %q; want 2 and one line on stderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if after := snapshot(t, e.home); after != before {
				t.Errorf("a usage error left something behind:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestAgentNoTerminal: an agent's full-screen interface started without a
// terminal, without -d and without the agent's own non-interactive
// arguments is refused at once, exit 2, with the three ways out, before
// anything is set up; with those arguments it goes on (issue 14).
func TestAgentNoTerminal(t *testing.T) {
	for _, name := range agent.Names() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			vars := homeAgent(t, name)
			before := snapshot(t, e.home)
			// stdin and stdout are pipes. Gemini takes a piped stdin as its
			// prompt and answers without its interface: not refused.
			h := agent.HeadlessArgs[name]
			if h.StdinPrompt {
				// Without keys: past the terminal check, to the missing key.
				r := e.run("", []string{vars[0]}, name)
				if r.code == 2 || !strings.Contains(r.stderr, "no API key for "+name) {
					t.Errorf("%s with its prompt on stdin: exit %d; want it past the terminal check:\n%s", name, r.code, r.stderr)
				}
				return
			}
			r := e.run("", vars, name)
			want := []string{name + " needs a terminal", "with -d", "stockade attach -s ID", "stockade " + name + " -- " + h.Example}
			if r.code != 2 || len(stderrLines(r.stderr)) != 1 || strings.Contains(r.stdout, "AGENT-RAN") {
				t.Errorf("exit %d, stdout %q; want 2, one line and nothing run:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if after := snapshot(t, e.home); after != before {
				t.Errorf("the refusal left something behind:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			// With the agent's non-interactive word it gets past the check:
			// without keys, to the missing-key error.
			r = e.run("", []string{vars[0]}, headless(name, "hi")...)
			if r.code == 2 || !strings.Contains(r.stderr, "no API key for "+name) {
				t.Errorf("%s: exit %d; want it past the terminal check, to the missing key:\n%s", strings.Join(headless(name, "hi"), " "), r.code, r.stderr)
			}
		})
	}
}

// TestSlurmBinaryRewritable: every Slurm job starts the stockade binary on
// the compute node outside any sandbox, so --slurm refuses a binary that
// a sandbox could rewrite before a queued job starts: one in the project
// (or another tree the sandbox writes), or one writable by others than
// root. Exit 2, one line with the fix, nothing set up.
func TestSlurmBinaryRewritable(t *testing.T) {
	e := newEnv(t)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(e.home), "bin")
	for _, c := range []struct {
		name, path string
		mode       os.FileMode
		want       string
	}{
		{"in the project", filepath.Join(e.workdir, "bin", "stockade"), 0o755, "which the sandbox can write"},
		{"group-writable", filepath.Join(other, "stockade"), 0o775, "is writable by others than root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if os.Getuid() != 0 && c.mode != 0o755 {
				c.want = "is not root's" // a user's copy is the user's: said first
			}
			os.MkdirAll(filepath.Dir(c.path), 0o755)
			if err := os.WriteFile(c.path, data, 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chmod(c.path, c.mode)
			defer os.RemoveAll(filepath.Dir(c.path))
			before := snapshot(t, e.home)
			r := e.runBin(c.path, "", nil, "run", "--slurm", "--", "true")
			if r.code != 2 || len(stderrLines(r.stderr)) != 1 || !strings.Contains(r.stderr, "could be rewritten there") ||
				!strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "install -m 0755") {
				t.Errorf("exit %d; want 2 and one line naming %q and the fix:\n%s", r.code, c.want, r.stderr)
			}
			// The project's bin/ is the test's own; the rest is as it was.
			if after := snapshot(t, e.home); after != before {
				t.Errorf("the refusal left something behind:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}
