package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/agent"
)

// fakeAgentScript stands in for an agent CLI: stockade finds it on PATH
// like the real one and runs it with the agent's profile. Its first
// argument says what to plant in its sandbox HOME, the way a hostile agent
// would for the next session; then it says it ran.
const fakeAgentScript = `#!/bin/sh
rel=$2; d=$(dirname "$rel")
case $1 in
plant-parent) # .codex -> the user's real ~/.codex (a loop inside, the real one outside)
	mv "$HOME/$d" "$HOME/$d.moved" && ln -s "$HOME/$d" "$HOME/$d" || exit 3 ;;
plant-last) # .codex/AGENTS.md -> the user's real ~/.codex/AGENTS.md
	mv "$HOME/$d" "$HOME/$d.moved" && mkdir "$HOME/$d" && ln -s "$HOME/$rel" "$HOME/$rel" || exit 3 ;;
plant-file)
	mkdir -p "$HOME/$d" && echo PLANTED >"$HOME/$rel" || exit 3 ;;
show-file)
	if [ -e "$HOME/$rel" ]; then echo "SEEN $rel"; else echo "ABSENT $rel"; fi ;;
esac
echo AGENT-RAN
`

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
				if r := e.run("", vars, name, "--", plant, p.GuideFile); r.code != 0 || !strings.Contains(r.stdout, "AGENT-RAN") {
					t.Fatalf("planting run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				r := e.run("", vars, name, "--", "run")
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

// TestAgentHomeHardLink: a hard link in the sandbox HOME to a file of the
// user's (stockade's HOME is on the user's filesystem; no sandbox can make
// one, but a loosened --rw or a tool of the user's may) is replaced, never
// truncated: the guide is written as a new file renamed into place, and a
// first-run file is never opened once something is at its name.
func TestAgentHomeHardLink(t *testing.T) {
	requireSandbox(t)
	for _, name := range []string{"codex", "opencode", "gemini"} {
		p := agent.Profiles[name]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			vars := homeAgent(t, name)
			if r := e.run("", vars, name, "--", "run"); r.code != 0 {
				t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			home := agentHome(t, e, name)
			const own = "the user's own file\n"
			links := []string{p.GuideFile}
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
			r := e.run("", vars, name, "--", "run")
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
