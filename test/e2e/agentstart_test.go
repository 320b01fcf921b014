package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/agent"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// claudePrompt is Claude Code's input box: an empty "❯" line between two
// rules.
var claudePrompt = regexp.MustCompile(`(?m)^─{20,}\s*\n❯[\s\x{a0}]*\n─{20,}`)

// TestClaudeStartsAtPrompt starts `stockade claude` on a terminal against
// the fake provider and types nothing: the first screen Claude Code shows
// is its input prompt, without the "trust this folder" question (whose
// default exits) or the "Detected a custom API key" one (whose default
// refuses the placeholder key, away from the auth proxy). In a new sandbox
// HOME, and in one whose .claude.json holds the user's settings from
// earlier sessions (no onboarding mark among them), which are all kept.
func TestClaudeStartsAtPrompt(t *testing.T) {
	requireSandbox(t)
	if os.Getenv("STOCKADE_FAKE_PROVIDER") == "" {
		requireTestnet(t)
	}
	dirs := append(filepath.SplitList(os.Getenv("STOCKADE_AGENT_BIN")), filepath.SplitList(os.Getenv("PATH"))...)
	in, err := agent.Find(agent.Profiles["claude"], strings.Join(dirs, ":"))
	if err != nil {
		testenv.SkipOrFail(t, "%v (scripts/test.sh installs it)", err)
	}
	path := "PATH=" + strings.Join(append(dirs, in.PathDirs...), ":")
	t.Run("new", func(t *testing.T) { claudeStart(t, path, "") })
	t.Run("kept", func(t *testing.T) {
		home := claudeStart(t, path, `{"theme": "light", "numStartups": 41,
  "projects": {"/elsewhere": {"hasTrustDialogAccepted": false, "allowedTools": ["Bash(ls)"]}},
  "customApiKeyResponses": {"approved": ["abcdefghij0123456789"], "rejected": ["zyxwvutsrq9876543210"]}}`)
		b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Theme    string
			Projects map[string]struct {
				HasTrustDialogAccepted bool
				AllowedTools           []string
			}
			CustomApiKeyResponses struct{ Approved, Rejected []string }
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf(".claude.json: %v\n%s", err, b)
		}
		keys, other := got.CustomApiKeyResponses, got.Projects["/elsewhere"]
		if got.Theme != "light" || !slices.Equal(other.AllowedTools, []string{"Bash(ls)"}) || other.HasTrustDialogAccepted ||
			!slices.Contains(keys.Approved, "abcdefghij0123456789") || !slices.Equal(keys.Rejected, []string{"zyxwvutsrq9876543210"}) {
			t.Errorf("the user's settings in .claude.json were not kept:\n%s", b)
		}
	})
}

// claudeStart runs stockade claude in a new project whose sandbox HOME
// holds settings as .claude.json (none if empty) until Claude Code shows
// its prompt, ends it, and returns the HOME.
func claudeStart(t *testing.T, path, settings string) string {
	e := newEnv(t)
	e.stopSessions()
	key, err := sandboxhome.Key(e.workdir)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(e.home, ".local/share/stockade", sandboxhome.Rel("claude", key, false))
	if settings != "" {
		e.write(filepath.Join(home, ".claude.json"), settings)
	}
	m := newTmux(t, e, 120, 40, strings.Join([]string{path, "ANTHROPIC_API_KEY=sk-ant-api03-REALKEY-start",
		bin, "claude", "--log-level", "error", "--upstream", "anthropic=" + fakeProvider}, " "))
	screen := m.waitMatch(claudePrompt)
	history := m.run("capture-pane", "-p", "-S", "-")
	for _, dialog := range []string{"trust this folder", "Detected a custom API key", "Do you want to use this API key"} {
		if strings.Contains(history, dialog) {
			t.Errorf("Claude Code asked %q before its prompt:\n%s", dialog, history)
		}
	}
	if !strings.Contains(screen, "Claude Code") {
		t.Errorf("the screen with the prompt is not Claude Code's:\n%s", screen)
	}
	// Out: ^C twice.
	m.run("send-keys", "C-c")
	m.waitScreen("again")
	m.run("send-keys", "C-c")
	m.waitScreen("exit=")

	b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Projects              map[string]struct{ HasTrustDialogAccepted bool }
		CustomApiKeyResponses struct{ Approved []string }
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf(".claude.json: %v\n%s", err, b)
	}
	if !got.Projects[e.workdir].HasTrustDialogAccepted || !slices.Contains(got.CustomApiKeyResponses.Approved, "sk-proxy") {
		t.Errorf(".claude.json does not trust %s and the placeholder key:\n%s", e.workdir, b)
	}
	return home
}

// waitMatch is waitScreen for a pattern.
func (m *tmux) waitMatch(re *regexp.Regexp) string {
	m.t.Helper()
	screen := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		screen = m.run("capture-pane", "-p")
		if re.MatchString(screen) {
			return screen
		}
	}
	m.t.Fatalf("screen never matched %s:\n%s", re, screen)
	return ""
}
