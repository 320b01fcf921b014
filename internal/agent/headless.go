package agent

import (
	"slices"
	"strings"
)

// Headless says, per agent, which arguments make its CLI run without a
// terminal. Started without one and without these, a full-screen agent
// waits for a terminal that never comes (OpenCode waited ten minutes in a
// script, silently), so stockade refuses it up front. The lists come from
// each CLI's --help: they err towards running, since a refused batch job
// is as broken as a hung one.
type Headless struct {
	// Flags make the CLI print and exit wherever they are, alone or as
	// --flag=value.
	Flags []string
	// Commands are subcommands that need no terminal; any argument that
	// is not a flag counts.
	Commands []string
	// StdinPrompt: the CLI reads its prompt from a stdin that is not a
	// terminal and answers without its interface (echo PROMPT | gemini).
	StdinPrompt bool
	// Example is the non-interactive form the refusal suggests.
	Example string
}

// versionAndHelp print and exit in every CLI.
var versionAndHelp = []string{"-h", "--help", "-v", "-V", "--version"}

// HeadlessArgs is the table for the profiles; TestHeadlessTable checks that
// every profile has a row.
var HeadlessArgs = map[string]Headless{
	"claude": {Flags: []string{"-p", "--print"},
		Commands: []string{"auth", "auto-mode", "doctor", "gateway", "import", "install", "logs", "mcp", "plugin", "plugins",
			"purge", "respawn", "rm", "setup-token", "stop", "kill", "ultrareview", "update", "upgrade"},
		Example: "-p 'PROMPT'"},
	"codex": {Commands: []string{"exec", "e", "review", "login", "logout", "mcp", "mcp-server", "plugin", "app-server",
		"remote-control", "completion", "update", "doctor", "sandbox", "debug", "apply", "a", "queue", "archive", "delete",
		"migrate-rollouts", "help"},
		Example: "exec 'PROMPT'"},
	"gemini": {Flags: []string{"-p", "--prompt"},
		Commands:    []string{"mcp", "extensions", "extension", "skills", "skill", "hooks", "hook", "gemma"},
		StdinPrompt: true, Example: "-p 'PROMPT'"},
	"opencode": {Commands: []string{"run", "completion", "acp", "mcp", "debug", "providers", "auth", "agent", "upgrade",
		"uninstall", "serve", "web", "models", "stats", "export", "import", "github", "session", "plugin", "plug", "db"},
		Example: "run 'PROMPT'"},
}

// Runs reports whether the CLI runs to the end without a terminal, given
// its arguments and whether its stdin is one.
func (h Headless) Runs(args []string, stdinTerminal bool) bool {
	if h.StdinPrompt && !stdinTerminal {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			name, _, _ := strings.Cut(a, "=")
			if slices.Contains(h.Flags, name) || slices.Contains(versionAndHelp, name) {
				return true
			}
			continue
		}
		if slices.Contains(h.Commands, a) {
			return true
		}
	}
	return false
}
