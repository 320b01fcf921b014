package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCompletionScripts: every shell's script parses, and bash, zsh and
// fish, driven as at a TAB, complete subcommands, flags and the ID of a
// live session after -s (issue 14).
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
	// zsh: an interactive zsh on a terminal of its own, with compinit and
	// the script loaded, typed at.
	_, noZsh := exec.LookPath("zsh")
	zshAt := func(line string) ([]string, string) {
		t.Helper()
		return zshComplete(t, dir, scripts["zsh"], e.workdir, append(append([]string{}, e.vars...), "PATH="+onPath+":/usr/local/bin:/usr/bin:/bin"), line)
	}
	if noZsh == nil {
		if got, line := zshAt("stockade "); !has(got, "run") || !has(got, "attach") || !has(got, "network") || has(got, "__complete") {
			t.Errorf("zsh: stockade TAB: %q (line %q)", got, line)
		}
		if _, line := zshAt("stockade net"); line != "stockade network " {
			t.Errorf("zsh: stockade net TAB: the line is %q, want %q", line, "stockade network ")
		}
		if _, line := zshAt("stockade run --tri"); line != "stockade run --tripwire " {
			t.Errorf("zsh: stockade run --tri TAB: the line is %q", line)
		}
		if got, _ := zshAt("stockade run --network "); !has(got, "proxy") || !has(got, "none") || len(got) != 2 {
			t.Errorf("zsh: stockade run --network TAB: %q, want proxy and none", got)
		}
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
	if noZsh == nil {
		if got, _ := zshAt("stockade attach -s "); !has(got, id) {
			t.Errorf("zsh: stockade attach -s TAB: %q lacks the live session %s", got, id)
		}
		// The only session: TAB puts its whole ID on the line.
		if _, line := zshAt("stockade stop -s " + id[:3]); line != "stockade stop -s "+id+" " {
			t.Errorf("zsh: stockade stop -s %s TAB: the line is %q, want the ID %s completed", id[:3], line, id)
		}
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

// zshDriver types a line and a TAB into an interactive zsh on a
// pseudo-terminal (the zsh/zpty module) that has loaded compinit and the
// completion script, then a key bound to a widget that writes the line as
// the TAB left it. Every candidate the completion system adds is written
// too, as zsh matched it: compadd is wrapped, and passes each call on.
const (
	zshInit = `PS1='' PROMPT='' RPROMPT=''
autoload -Uz compinit && compinit -u -D
source "$STK_SCRIPT"
compadd() {
	local -a __hits
	builtin compadd -O __hits "$@"
	(( ${#__hits} )) && print -rl -- "${__hits[@]}" >>"$STK_OUT"
	builtin compadd "$@"
}
stk-line() { print -r -- "LINE=$BUFFER" >>"$STK_OUT"; print -r -- "<<line>>" }
zle -N stk-line
bindkey '^I' complete-word
bindkey '^X' stk-line
print '<<ready>>'
`
	zshDrive = `zmodload zsh/zpty || { print -u2 "zsh has no zpty module"; exit 3 }
zpty z env TERM=dumb zsh -f -i
zpty -w z "source ${(q)STK_INIT}"
zpty -r z out '*<<ready>>*' || exit 4
zpty -w -n z "$1"$'\t'$'\030'
zpty -r z out '*<<line>>*' || exit 5
zpty -d z
`
)

// zshComplete returns what zsh offers at a TAB after line, deduplicated,
// and the line as the TAB left it.
func zshComplete(t *testing.T, dir, script, cwd string, env []string, line string) ([]string, string) {
	t.Helper()
	init, drive := filepath.Join(dir, "init.zsh"), filepath.Join(dir, "drive.zsh")
	os.WriteFile(init, []byte(zshInit), 0o644)
	os.WriteFile(drive, []byte(zshDrive), 0o644)
	out := filepath.Join(dir, "zsh.out")
	os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "zsh", "-f", drive, line)
	cmd.Dir = cwd
	cmd.Env = append(env, "STK_SCRIPT="+script, "STK_INIT="+init, "STK_OUT="+out)
	cmd.WaitDelay = 5 * time.Second
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zsh at %q TAB: %v\n%s", line, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("zsh at %q TAB wrote nothing: %v", line, err)
	}
	var cands []string
	var after string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if rest, ok := strings.CutPrefix(l, "LINE="); ok {
			after = rest
		} else if !slices.Contains(cands, l) {
			cands = append(cands, l)
		}
	}
	return cands, after
}
