package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompletionScripts: every shell's script parses, and bash and fish,
// driven as at a TAB, complete subcommands, flags and the ID of a live
// session after -s (issue 14).
func TestCompletionScripts(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := e.run("", nil, "completion", sh)
		if r.code != 0 || r.stdout == "" {
			t.Fatalf("completion %s: exit %d\n%s", sh, r.code, r.stderr)
		}
		scripts[sh] = filepath.Join(dir, "stockade."+sh)
		os.WriteFile(scripts[sh], []byte(r.stdout), 0o644)
		if _, err := exec.LookPath(sh); err != nil {
			if sh == "bash" || os.Getenv("STOCKADE_MUST_WORK") == "1" {
				t.Errorf("%s is not installed (scripts/test.sh installs it): %v", sh, err)
			}
			continue
		}
		if out, err := exec.Command(sh, "-n", scripts[sh]).CombinedOutput(); err != nil {
			t.Errorf("%s -n on the completion script: %v\n%s", sh, err, out)
		}
	}
	if r := e.run("", nil, "completion", "tcsh"); r.code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2\n%s", r.code, r.stderr)
	}

	// The scripts call the binary by the name typed: "stockade" on PATH.
	onPath := filepath.Join(dir, "bin")
	os.Mkdir(onPath, 0o755)
	if err := os.Symlink(bin, filepath.Join(onPath, "stockade")); err != nil {
		t.Fatal(err)
	}
	shell := func(sh string, script string) string {
		t.Helper()
		cmd := exec.Command(sh, "-c", script)
		cmd.Dir = e.workdir
		cmd.Env = append(append([]string{}, e.vars...), "PATH="+onPath+":/usr/local/bin:/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s -c %q: %v\n%s", sh, script, err, out)
		}
		return string(out)
	}
	// bash: what the shell does at a TAB, with COMP_WORDS and COMP_CWORD.
	bashAt := func(words ...string) []string {
		script := "source " + scripts["bash"] + "\nCOMP_WORDS=("
		for _, w := range words {
			script += "'" + w + "' "
		}
		script += ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_stockade\nprintf '%s\\n' \"${COMPREPLY[@]}\""
		return strings.Fields(shell("bash", script))
	}
	has := func(got []string, w string) bool {
		for _, g := range got {
			if g == w {
				return true
			}
		}
		return false
	}
	if got := bashAt("stockade", ""); !has(got, "run") || !has(got, "attach") || !has(got, "network") {
		t.Errorf("bash: stockade TAB: %q", got)
	}
	if got := bashAt("stockade", "net"); len(got) != 1 || got[0] != "network" {
		t.Errorf("bash: stockade net TAB: %q, want network", got)
	}
	if got := bashAt("stockade", "run", "--tri"); len(got) != 1 || got[0] != "--tripwire" {
		t.Errorf("bash: stockade run --tri TAB: %q, want --tripwire", got)
	}
	if got := bashAt("stockade", "run", "--network", ""); !has(got, "proxy") || !has(got, "none") {
		t.Errorf("bash: stockade run --network TAB: %q", got)
	}

	requireSandbox(t)
	id := e.startSession("sleep", "1000")
	defer e.run("", nil, "stop", "-s", id)
	if got := bashAt("stockade", "attach", "-s", ""); !has(got, id) {
		t.Errorf("bash: stockade attach -s TAB: %q lacks the live session %s", got, id)
	}
	if got := bashAt("stockade", "logs", "--session", id[:3]); !has(got, id) {
		t.Errorf("bash: stockade logs --session %s TAB: %q lacks %s", id[:3], got, id)
	}
	if _, err := exec.LookPath("fish"); err == nil {
		out := shell("fish", "source "+scripts["fish"]+"; complete -C 'stockade stop -s '")
		if !strings.Contains(out, id+"\trunning") {
			t.Errorf("fish: stockade stop -s TAB:\n%s\nlacks %s, running", out, id)
		}
		if out := shell("fish", "source "+scripts["fish"]+"; complete -C 'stockade network ag'"); !strings.HasPrefix(out, "agent\t") {
			t.Errorf("fish: stockade network ag TAB: %q", out)
		}
	}
}
