// Package agent holds the profiles of the coding agents stockade runs by
// name (stockade claude, opencode, codex, gemini): which binary, which
// provider routes of the auth proxy and the variables that point the CLI at
// them, what else the CLI needs to start non-interactively, and where its
// sandbox guide goes. Profiles are data; Find locates an agent's install on
// the host so that exactly its tree and its interpreter are mounted inside.
package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DummyKey is the only key the agent ever sees.
const DummyKey = "sk-proxy"

// AuthAddr is where the auth proxy listens inside the sandbox.
const AuthAddr = "127.0.0.1:2376"

// Profile describes one agent CLI.
type Profile struct {
	Name    string // stockade <Name>
	Binary  string // on the host's PATH
	Package string // npm package, for the install hint
	// Routes are the auth proxy routes the agent talks to; RouteEnv sets,
	// per route, the variables that point the CLI at the proxy ({{base}}
	// is http://127.0.0.1:2376/<route>, {{key}} the dummy key).
	Routes []string
	// Env is set inside as is: telemetry and auto-update off, and the
	// like. The route variables (base URL, dummy key) come from the auth
	// proxy's table.
	Env map[string]string
	// GuideFile is where, under the sandbox HOME, the agent reads global
	// instructions; the sandbox guide is written there at every start.
	GuideFile string
	// GuideArgs are arguments that hand the sandbox guide to the CLI
	// ({{guide}} is replaced), for CLIs that take it on the command line.
	GuideArgs []string
	// HomeFiles are written into the sandbox HOME when missing, so that
	// the CLI starts without a first-run wizard.
	HomeFiles map[string]string
}

// Profiles are the agents stockade knows by name.
var Profiles = map[string]Profile{
	"claude": {
		Name: "claude", Binary: "claude", Package: "@anthropic-ai/claude-code",
		Routes: []string{"anthropic"},
		Env: map[string]string{
			"DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1",
		},
		GuideArgs: []string{"--append-system-prompt", "{{guide}}"},
		HomeFiles: map[string]string{
			".claude.json": `{"hasCompletedOnboarding": true, "bypassPermissionsModeAccepted": false, "autoUpdates": false}`,
		},
	},
	"codex": {
		Name: "codex", Binary: "codex", Package: "@openai/codex",
		Routes:    []string{"openai"},
		Env:       map[string]string{"CODEX_DISABLE_TELEMETRY": "1"},
		GuideFile: ".codex/AGENTS.md",
	},
	"opencode": {
		Name: "opencode", Binary: "opencode", Package: "opencode-ai",
		Routes:    []string{"anthropic", "openai"},
		Env:       map[string]string{"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_SHARE": "1"},
		GuideFile: ".config/opencode/AGENTS.md",
	},
	"gemini": {
		Name: "gemini", Binary: "gemini", Package: "@google/gemini-cli",
		Routes:    []string{"google"},
		Env:       map[string]string{"GEMINI_CLI_NO_RELAUNCH": "true"},
		GuideFile: ".gemini/GEMINI.md",
		HomeFiles: map[string]string{
			".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}`,
		},
	},
}

// Names lists the known agents.
func Names() []string {
	var out []string
	for n := range Profiles {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Args returns the arguments that hand the guide to the agent.
func (p Profile) Args(guide string) []string {
	var out []string
	for _, a := range p.GuideArgs {
		out = append(out, strings.ReplaceAll(a, "{{guide}}", guide))
	}
	return out
}

// PrepareHome writes the profile's first-run files into the sandbox HOME
// (dir on the host) where they are missing, a user's own being kept, and
// the guide where the agent reads global instructions.
func (p Profile) PrepareHome(dir, guide string) error {
	if p.GuideFile != "" {
		path := filepath.Join(dir, p.GuideFile)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("writing the %s guide: %w", p.Name, err)
		}
		if err := os.WriteFile(path, []byte(guide), 0o600); err != nil {
			return fmt.Errorf("writing the %s guide: %w", p.Name, err)
		}
	}
	for rel, content := range p.HomeFiles {
		path := filepath.Join(dir, rel)
		if _, err := os.Lstat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("preparing the %s sandbox HOME: %w", p.Name, err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
			return fmt.Errorf("preparing the %s sandbox HOME: %w", p.Name, err)
		}
	}
	return nil
}
