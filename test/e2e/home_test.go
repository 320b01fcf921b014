package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/agent"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
)

// fakeAgentScript stands in for an agent CLI: stockade finds it on PATH
// like the real one and runs it with the agent's profile. Its first
// argument says what to plant in its sandbox HOME, the way a hostile agent
// would for the next session; then it says it ran.
const fakeAgentScript = `#!/bin/sh
[ "$1" = --append-system-prompt ] && shift 2 # claude's guide
case $1 in -p|exec|run) shift ;; esac # the word that runs it without a terminal (headless)
rel=$2; d=$(dirname "$rel")
case $1 in
plant-parent) # .codex -> the user's real ~/.codex (a loop inside, the real one outside)
	mv "$HOME/$d" "$HOME/$d.moved" && ln -s "$HOME/$d" "$HOME/$d" || exit 3 ;;
plant-last) # .codex/AGENTS.md -> the user's real ~/.codex/AGENTS.md
	mv "$HOME/$d" "$HOME/$d.moved" && mkdir "$HOME/$d" && ln -s "$HOME/$rel" "$HOME/$rel" || exit 3 ;;
plant-file)
	mkdir -p "$HOME/$d" && echo PLANTED >"$HOME/$rel" || exit 3 ;;
plant-selflink) # .claude.json -> the user's real ~/.claude.json
	rm -f "$HOME/$rel" && ln -s "$HOME/$rel" "$HOME/$rel" || exit 3 ;;
plant-fifo)
	rm -f "$HOME/$rel" && mkfifo "$HOME/$rel" || exit 3 ;;
show-file)
	if [ -e "$HOME/$rel" ]; then echo "SEEN $rel"; else echo "ABSENT $rel"; fi ;;
esac
echo AGENT-RAN
`

// headless is `NAME -- WORD ARGS...` with the word that runs agent name
// without a terminal (claude -p, codex exec, …), which fakeAgentScript drops.
func headless(name string, args ...string) []string {
	word, _, _ := strings.Cut(agent.HeadlessArgs[name].Example, " ")
	return append([]string{name, "--", word}, args...)
}

// homeAgent installs the fake agent name and returns the variables that
// put it on PATH and give every agent a key.
func homeAgent(t *testing.T, name string) []string {
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(fakeAgentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir + ":/usr/local/bin:/usr/bin:/bin",
		"ANTHROPIC_API_KEY=sk-ant-test-0123456789", "OPENAI_API_KEY=sk-test-0123456789", "GEMINI_API_KEY=AIza-test-0123456789"}
}

// TestAgentHomePlantedLinks: what an agent plants in its sandbox HOME
// never makes the next `stockade <agent>` write outside it. The user's
// real guide file (~/.codex/AGENTS.md, ~/.config/opencode/AGENTS.md,
// ~/.gemini/GEMINI.md) keeps its content and none of the agent's
// first-run files appears next to it, whether the agent replaced the
// guide's directory with a symlink to the real one or the guide itself
// with a symlink to the real file; the next start says what it replaced.
func TestAgentHomePlantedLinks(t *testing.T) {
	requireSandbox(t)
	for _, name := range []string{"codex", "opencode", "gemini"} {
		p := agent.Profiles[name]
		for _, plant := range []string{"plant-parent", "plant-last"} {
			t.Run(name+"/"+plant, func(t *testing.T) {
				e := newEnv(t)
				vars := homeAgent(t, name)
				const own = "the user's own instructions\n"
				e.write(filepath.Join(e.home, p.GuideFile), own)
				if r := e.run("", vars, headless(name, plant, p.GuideFile)...); r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
					t.Fatalf("planting run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				r := e.run("", vars, headless(name)...)
				checkUserAgentFiles(t, e.home, p, own)
				if r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
					t.Fatalf("next run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stderr, "replaced a symlink") {
					t.Errorf("the next run does not say what it replaced:\n%s", r.stderr)
				}
			})
		}
	}
}

// TestClaudeSettingsPlanted: Claude Code's settings file, which stockade
// edits at every start to answer its start-up questions, replaced by the
// agent with a symlink to the user's real ~/.claude.json or with a FIFO:
// the next start leaves it as it is and says so, neither writes the
// user's file nor hangs.
func TestClaudeSettingsPlanted(t *testing.T) {
	requireSandbox(t)
	for _, plant := range []string{"plant-selflink", "plant-fifo"} {
		t.Run(plant, func(t *testing.T) {
			e := newEnv(t)
			vars := homeAgent(t, "claude")
			const own = `{"theme": "the user's own"}` + "\n"
			user := e.write(filepath.Join(e.home, ".claude.json"), own)
			if r := e.run("", vars, headless("claude", plant, ".claude.json")...); r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
				t.Fatalf("planting run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r := e.run("", vars, headless("claude")...)
			if b, _ := os.ReadFile(user); string(b) != own {
				t.Errorf("the user's ~/.claude.json was written: %q", b)
			}
			if r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
				t.Fatalf("next run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "stockade left it as it is") {
				t.Errorf("the next run does not say it left .claude.json alone:\n%s", r.stderr)
			}
		})
	}
}

// TestAgentHomeHardLink: a hard link in the sandbox HOME to a file of the
// user's (stockade's HOME is on the user's filesystem; no sandbox can make
// one, but a loosened --rw or a tool of the user's may) is replaced, never
// truncated: the guide and the settings stockade edits are written as new
// files renamed into place, and a first-run file is never opened once
// something is at its name.
func TestAgentHomeHardLink(t *testing.T) {
	requireSandbox(t)
	for _, name := range []string{"claude", "codex", "opencode", "gemini"} {
		p := agent.Profiles[name]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			vars := homeAgent(t, name)
			if r := e.run("", vars, headless(name)...); r.code != 0 {
				t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			home := agentHome(t, e, name)
			const own = `{"own": "the user's own file"}` + "\n" // JSON, for the files stockade edits
			var links []string
			if p.GuideFile != "" {
				links = append(links, p.GuideFile)
			}
			for rel := range p.HomeFiles {
				links = append(links, rel)
			}
			for i, rel := range links {
				user := e.write(filepath.Join(e.home, "mine", fmt.Sprint(i)), own)
				os.Remove(filepath.Join(home, rel))
				if err := os.Link(user, filepath.Join(home, rel)); err != nil {
					t.Fatal(err)
				}
			}
			r := e.run("", vars, headless(name)...)
			for i, rel := range links {
				if b, _ := os.ReadFile(filepath.Join(e.home, "mine", fmt.Sprint(i))); string(b) != own {
					t.Errorf("the user's file hard-linked at %s was written: %q", rel, b)
				}
			}
			if r.code != 0 {
				t.Fatalf("next run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "(a hard link)") {
				t.Errorf("the next run does not say it replaced a hard link:\n%s", r.stderr)
			}
		})
	}
}

// agentHome finds the sandbox HOME stockade used for name in e.
func agentHome(t *testing.T, e *env, name string) string {
	t.Helper()
	data := filepath.Join(e.home, ".local/share/stockade")
	found, _ := filepath.Glob(filepath.Join(data, "project-home", name, "*"))
	if _, err := os.Stat(filepath.Join(data, "home", name)); err == nil {
		found = append(found, filepath.Join(data, "home", name))
	}
	if len(found) != 1 {
		t.Fatalf("sandbox HOME of %s: found %q", name, found)
	}
	return found[0]
}

// checkUserAgentFiles: the user's real guide file kept its content, and
// none of the profile's first-run files was created in the real home.
func checkUserAgentFiles(t *testing.T, home string, p agent.Profile, own string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(home, p.GuideFile)); string(b) != own {
		t.Errorf("the user's real %s was written: %q %v", p.GuideFile, b, err)
	}
	for rel := range p.HomeFiles {
		if _, err := os.Lstat(filepath.Join(home, rel)); err == nil {
			t.Errorf("%s was created in the user's real home", rel)
		}
	}
}

// TestAgentHomePerProject: what one project's agent leaves in its HOME (a
// shell rc, a hook in its settings) is not there for the same agent in
// another project, and still there for the next session of the same
// project; --shared-home shares it, and says so at start.
func TestAgentHomePerProject(t *testing.T) {
	requireSandbox(t)
	for _, name := range agent.Names() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			vars := homeAgent(t, name)
			other := filepath.Join(e.home, "other")
			if err := os.Mkdir(other, 0o755); err != nil {
				t.Fatal(err)
			}
			run := func(extra []string, args ...string) string {
				t.Helper()
				r := e.run("", vars, append(append([]string{name}, extra...), headless(name, args...)[1:]...)...)
				if r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
					t.Fatalf("stockade %s %q: exit %d\n%s%s", name, args, r.code, r.stdout, r.stderr)
				}
				return r.stdout + r.stderr
			}
			run(nil, "plant-file", ".bashrc")
			if out := run([]string{"--workdir", other}, "show-file", ".bashrc"); !strings.Contains(out, "ABSENT .bashrc") {
				t.Errorf("another project's session sees what this one planted:\n%s", out)
			}
			if out := run(nil, "show-file", ".bashrc"); !strings.Contains(out, "SEEN .bashrc") {
				t.Errorf("the project's HOME did not persist:\n%s", out)
			}
			run([]string{"--shared-home"}, "plant-file", ".shared")
			out := run([]string{"--shared-home", "--workdir", other}, "show-file", ".shared")
			if !strings.Contains(out, "SEEN .shared") || !strings.Contains(out, "LOOSENED: shared_home") {
				t.Errorf("--shared-home does not share, or not loudly:\n%s", out)
			}
		})
	}
}

// TestRunHomeLinks: a symlink where stockade creates or opens the sandbox
// HOME of `stockade run` (below its data directory, which no sandbox can
// write) is refused with the path, never followed into the user's ~/.ssh.
func TestRunHomeLinks(t *testing.T) {
	requireSandbox(t)
	cases := []struct {
		name  string
		flags []string
		links func(key string) map[string]string // data-relative link → target below the home
	}{
		{"home itself", nil, func(key string) map[string]string {
			return map[string]string{"project-home/run/" + key: ".ssh", "home/run": ".ssh"}
		}},
		{"a parent", nil, func(key string) map[string]string {
			return map[string]string{"project-home": "secrets", "home": "secrets"}
		}},
		{"shared home itself", []string{"--shared-home"}, func(key string) map[string]string {
			return map[string]string{"home/run": ".ssh"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			const secret = "PRIVATE-KEY-OF-THE-USER"
			e.write(filepath.Join(e.home, ".ssh", "id_rsa"), secret)
			key, err := sandboxhome.Key(e.workdir)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{"secrets/run", "secrets/run/" + key} {
				e.write(filepath.Join(e.home, d, "id_rsa"), secret)
			}
			data := filepath.Join(e.home, ".local/share/stockade")
			for link, target := range c.links(key) {
				os.MkdirAll(filepath.Dir(filepath.Join(data, link)), 0o700)
				if err := os.Symlink(filepath.Join(e.home, target), filepath.Join(data, link)); err != nil {
					t.Fatal(err)
				}
			}
			before := listTree(t, e.home)
			r := e.run("", nil, append(append([]string{"run"}, c.flags...), "--", "sh", "-c", "cat $HOME/id_rsa")...)
			if after := listTree(t, e.home); after != before {
				t.Errorf("the user's home changed through the link:\n%s=>\n%s", before, after)
			}
			if strings.Contains(r.stdout, secret) {
				t.Fatalf("the sandbox HOME followed a symlink to the user's secret:\n%s", r.stdout)
			}
			if r.code != 125 || !strings.Contains(r.stderr, "a symlink or a file stands in its path") {
				t.Errorf("exit %d, want 125 and the reason:\n%s", r.code, r.stderr)
			}
		})
	}
}

// listTree lists the names below dir, but for stockade's own directories.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".local" {
			return filepath.SkipDir
		}
		fmt.Fprintln(&b, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestProjectFileSharedHome: a project's .stockade.json comes with the
// repository and cannot ask for the shared HOME.
func TestProjectFileSharedHome(t *testing.T) {
	e := newEnv(t)
	e.write(".stockade.json", `{"shared_home": true}`)
	r := e.run("", nil, "run", "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, `"shared_home": true is not allowed: a project file may only tighten`) {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}

// TestAgentInstallHoldsPrivate: an agent's install is bound read-only
// like a --ro tree and held to its rules. A node under ~/.local (a
// tarball extracted there) brings ~/.local in: stockade's state and data
// directories in it are masked, as for --ro ~/.local (they were listed:
// every session's records and control sockets, every project's sandbox
// HOME). Refused: one that would bring in the whole home directory
// (~/bin/node), named through a link too; one found through a link in a
// PATH directory the sandbox writes; an interpreter given as a path.
func TestAgentInstallHoldsPrivate(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	// A session's records and a project's sandbox HOME exist already.
	if r := e.run("", nil, "run", "--", "true"); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	probe := "#!/bin/sh\nfor d in " + filepath.Join(e.home, ".local/state/stockade") + " " + filepath.Join(e.home, ".local/share/stockade") +
		"; do [ -n \"$(ls -A $d 2>/dev/null)\" ] && echo \"LISTED $d\"; done\necho AGENT-RAN\n"
	tools := filepath.Join(t.TempDir(), "tools")
	for _, f := range []struct{ path, content string }{
		{filepath.Join(e.home, ".local/bin/node"), probe},
		{filepath.Join(tools, "claude"), "#!/usr/bin/env node\n"},
		{filepath.Join(e.home, "bin/node"), probe},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"ANTHROPIC_API_KEY=sk-ant-test-0123456789"}
	r := e.run("", append([]string{"PATH=" + tools + ":" + filepath.Join(e.home, ".local/bin") + ":/usr/bin:/bin"}, keys...), headless("claude")...)
	if r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
		t.Fatalf("node under ~/.local: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "LISTED") {
		t.Errorf("the agent saw stockade's own directories through its install:\n%s", r.stdout)
	}
	r = e.run("", append([]string{"PATH=" + tools + ":" + filepath.Join(e.home, "bin") + ":/usr/bin:/bin"}, keys...), headless("claude")...)
	if r.code == 0 || strings.Contains(r.stdout, "AGENT-RAN") || !strings.Contains(r.stderr, "holds your home directory") {
		t.Errorf("node at ~/bin/node: exit %d, want a refusal naming the home directory\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same with HOME named through a link (/home -> /var/home): the
	// install's real path is compared with the home's real path too.
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Symlink(e.home, link); err != nil {
		t.Fatal(err)
	}
	r = e.run("", append([]string{"HOME=" + link, "PATH=" + tools + ":" + filepath.Join(link, "bin") + ":/usr/bin:/bin"}, keys...), headless("claude")...)
	if r.code == 0 || strings.Contains(r.stdout, "AGENT-RAN") || !strings.Contains(r.stderr, "holds your home directory") {
		t.Errorf("node at ~/bin/node, HOME through a link: exit %d, want a refusal naming the home directory\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A PATH directory in the project (a .venv/bin) holding a link an
	// earlier session planted: it chose the interpreter, so what the host
	// binds (here ~/.local, through node's directory).
	venv := filepath.Join(e.workdir, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.home, ".local/bin/node"), filepath.Join(venv, "node")); err != nil {
		t.Fatal(err)
	}
	r = e.run("", append([]string{"PATH=" + tools + ":" + venv + ":/usr/bin:/bin"}, keys...), headless("claude")...)
	if r.code == 0 || strings.Contains(r.stdout, "AGENT-RAN") || !strings.Contains(r.stderr, "found on PATH, is a link") {
		t.Errorf("node linked from the project's .venv/bin: exit %d, want a refusal naming the link\n%s%s", r.code, r.stdout, r.stderr)
	}
	// An interpreter given as a path climbs out of its PATH directory.
	if err := os.WriteFile(filepath.Join(tools, "claude"), []byte("#!/usr/bin/env ../../home/.local/bin/node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = e.run("", append([]string{"PATH=" + tools + ":/usr/bin:/bin"}, keys...), headless("claude")...)
	if r.code == 0 || strings.Contains(r.stdout, "AGENT-RAN") || !strings.Contains(r.stderr, "looks an interpreter up by its name") {
		t.Errorf("an interpreter given as a path: exit %d, want a refusal\n%s%s", r.code, r.stdout, r.stderr)
	}
}
