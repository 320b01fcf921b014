// Package agent holds the profiles of the coding agents stockade runs by
// name (stockade claude, opencode, codex, gemini): which binary, which
// provider routes of the auth proxy and the variables that point the CLI at
// them, what else the CLI needs to start non-interactively, and where its
// sandbox guide goes. Profiles are data; Find locates an agent's install on
// the host so that exactly its tree and its interpreter are mounted inside.
package agent

import (
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Profile describes one agent CLI.
type Profile struct {
	Name    string // stockade <Name>
	Binary  string // on the host's PATH
	Package string // npm package, for the install hint
	// Routes are the auth proxy routes the agent talks to; RouteEnv sets,
	// per route, the variables that point the CLI at the proxy ({{base}}
	// is sandboxnet.AuthURL/<route>, {{key}} sandboxnet.DummyKey).
	Routes []string
	// Env is set inside as is: telemetry and auto-update off, and the
	// like. The route variables (base URL, dummy key) come from the auth
	// proxy's table.
	Env map[string]string
	// RouteEnv, when set, gives the variables that point the CLI at the
	// routes that have a key (names sorted), for a CLI that takes its
	// base URLs from one config rather than from a variable per provider.
	RouteEnv func(routes []string) map[string]string
	// GuideFile is where, under the sandbox HOME, the agent reads global
	// instructions; the sandbox guide is written there at every start
	// (sandboxhome.Home.WriteGuide).
	GuideFile string
	// GuideArgs are arguments that hand the sandbox guide to the CLI
	// ({{guide}} is replaced), for CLIs that take it on the command line.
	GuideArgs []string
	// HomeFiles are written into the sandbox HOME where nothing is, so
	// that the CLI starts without a first-run wizard; a new HOME starts
	// with these and nothing else (sandboxhome.Home.Seed).
	HomeFiles map[string]string
	// HomeJSON are JSON files under the sandbox HOME that stockade edits
	// at every start (after HomeFiles), keeping what else they hold: the
	// answers to the CLI's start-up questions (sandboxhome.Home.EditJSON).
	HomeJSON map[string][]JSONEdit
}

// codexConfig points Codex at the auth proxy's openai route with a
// provider of its own: the Responses API over plain HTTP streaming (the
// built-in openai provider ignores OPENAI_BASE_URL and tries WebSockets
// first), the placeholder key from OPENAI_API_KEY.
const codexConfig = `model_provider = "stockade"
check_for_update_on_startup = false

[model_providers.stockade]
name = "OpenAI through the stockade auth proxy"
base_url = "` + sandboxnet.AuthURL + `/openai/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false

[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false`

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
		HomeJSON: map[string][]JSONEdit{".claude.json": claudeStart},
	},
	// Codex reads neither OPENAI_BASE_URL nor a telemetry variable: its
	// config.toml names the provider, and turns off what it fetches at
	// start (plugins: github.com, chatgpt.com).
	"codex": {
		Name: "codex", Binary: "codex", Package: "@openai/codex",
		Routes:    []string{"openai"},
		GuideFile: ".codex/AGENTS.md",
		HomeFiles: map[string]string{".codex/config.toml": codexConfig},
	},
	// OpenCode knows every provider of the auth proxy; its clients read
	// the base URLs from OPENCODE_CONFIG_CONTENT (see opencodeEnv), the
	// keys from the providers' variables. It would fetch its model catalog
	// (models.dev), LSP servers and @opencode-ai/plugin at start; the
	// variables and HomeFiles turn that off. Project config is off:
	// OpenCode writes .opencode/.gitignore, read-only here, and dies of
	// EROFS.
	"opencode": {
		Name: "opencode", Binary: "opencode", Package: "opencode-ai",
		Routes:   opencodeRoutes(),
		RouteEnv: opencodeEnv,
		Env: map[string]string{
			"OPENCODE_DISABLE_AUTOUPDATE":     "1",
			"OPENCODE_DISABLE_SHARE":          "1",
			"OPENCODE_DISABLE_MODELS_FETCH":   "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD":   "1",
			"OPENCODE_DISABLE_PROJECT_CONFIG": "1",
		},
		GuideFile: ".config/opencode/AGENTS.md",
		HomeFiles: map[string]string{
			".config/opencode/package.json":       `{"dependencies": {"@opencode-ai/plugin": "*"}}`,
			".config/opencode/package-lock.json":  `{"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}`,
			".config/opencode/node_modules/.keep": `written by stockade: OpenCode cannot install packages in the sandbox`,
		},
	},
	// Gemini CLI: GEMINI_CLI_TRUST_WORKSPACE trusts the project (headless
	// runs in an untrusted folder exit 55); selectedType is required (with
	// GOOGLE_GEMINI_BASE_URL set and none selected the CLI picks the
	// "gateway" auth type and rejects it).
	"gemini": {
		Name: "gemini", Binary: "gemini", Package: "@google/gemini-cli",
		Routes:    []string{"google"},
		Env:       map[string]string{"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
		GuideFile: ".gemini/GEMINI.md",
		HomeFiles: map[string]string{
			".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}, "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}}`,
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
