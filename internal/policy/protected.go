package policy

// The protected names: files and directories in a project that make a host
// tool run code, or steer an agent, without the user knowingly running the
// project's code. The sandboxed command may write anything else in the
// workdir; these stay read-only inside it.
//
// What is left out on purpose, because it is the project's own code that the
// agent legitimately edits and the user knowingly runs: package.json (its
// scripts, and the simple-git-hooks and lint-staged keys in it), Cargo.toml
// and build.rs, pyproject.toml and setup.py, Gemfile, go.mod and go.work,
// build.gradle with gradlew and its wrapper, pom.xml, Makefile, justfile,
// deno.json tasks, mise-tasks/. Also left out: .gitattributes (it can only
// name filter and diff drivers, whose commands live in the protected git
// config), .lfsconfig (git-lfs reads only URLs and fetch settings from it),
// .editorconfig (no code), .nvmrc, .node-version and .ruby-version (a
// version name, not a path, in the tools that read them today). The wrappers
// and PnP loaders that the project runs are reported at exit instead (see
// internal/review).

// reads says when a host tool reads a protected name.
type reads int

const (
	// live: a program the user keeps running beside the session reads it
	// at once, or at its next start or prompt: an editor, an IDE's agent,
	// the shell prompt's hook. Only a placeholder keeps it from being
	// planted.
	live reads = iota + 1
	// later: read when the user runs a host command (git, a package
	// manager, a command-line agent). A check at exit can catch it before
	// then, unless the user runs that command in another terminal while
	// the session runs.
	later
)

func (r reads) String() string {
	switch r {
	case live:
		return "live"
	case later:
		return "later"
	}
	return "unknown"
}

// protected is one built-in protected name.
type protected struct {
	path string // a Pattern: relative, "/" for a directory, a glob only in the last element
	why  string // which host tool runs or reads what, and when
	when reads
	// hook marks a git hook, or the config of a tool that git hooks run:
	// allow_hooks leaves it writable.
	hook bool
	// noStandIn, when set, says why an empty placeholder there would change
	// what the tool does (it would shadow another name of the same tool, or
	// the tool refuses an empty file). Such a name, when missing, gets no
	// placeholder and is checked at exit instead.
	noStandIn string
}

// Reasons shared by several entries.
const (
	oneOfNames    = "the tool reads only one of its config names, and an empty one may be the one it picks"
	trustPrompt   = "Neovim asks to trust each new exrc file at every start"
	emptyRefused  = "the tool refuses an empty file, so it would stop working in the project"
	zedFirstMatch = "Zed and Amp read only the first instruction file they find, and an empty one would hide AGENTS.md"
)

// protectTable lists the built-in protected names, grouped by the tool
// that acts on them.
var protectTable = []protected{
	// Git and git hook managers: code at the user's next git command.
	{path: ".git/hooks/", when: later, hook: true,
		why: "git runs these scripts at commit, checkout, merge, rebase and push"},
	{path: ".git/config", when: later,
		why: "git runs core.fsmonitor, core.hooksPath, core.pager, aliases, filters and diff drivers named here at the next git status or diff"},
	// More of what git reads from the repository (after the session
	// internal/gitguard checks these again, and every nested repository;
	// see docs/sandbox.md, "Git metadata"). Not here: .git/commondir: git
	// never writes one in a repository's own git directory and refuses an
	// empty one, so gitguard moves a new one aside after the session.
	// Objects, refs, the index, logs and HEAD stay writable: commit,
	// checkout -b, stash, merge and rebase work inside.
	{path: ".git/config.worktree", when: later,
		why: "git reads it when extensions.worktreeConfig is set: the same power as .git/config; an empty one is an empty configuration"},
	{path: ".git/info/attributes", when: later,
		why: "attributes pick the filter, diff and merge drivers git runs at status, diff, add and checkout"},
	{path: ".git/modules/*/config", when: later,
		why: "a submodule's configuration: git status in the superproject runs its core.fsmonitor"},
	{path: ".git/modules/*/hooks/", when: later, hook: true,
		why: "a submodule's hooks: git submodule update and checkout run them"},
	{path: ".git/worktrees/*/commondir", when: later,
		why: "a linked worktree's commondir says where git takes its configuration and hooks from"},
	{path: ".git/worktrees/*/config.worktree", when: later,
		why: "a linked worktree's own configuration"},
	{path: ".gitmodules", when: later,
		why: "git submodule update fetches and checks out the repositories and paths named here"},
	{path: ".githooks/", when: later, hook: true,
		why: "the usual directory a project points core.hooksPath at: git runs its scripts like .git/hooks"},
	{path: ".git-hooks/", when: later, hook: true,
		why: "core.hooksPath's other usual directory, and overcommit's directory of Ruby hook plugins"},
	{path: ".husky/", when: later, hook: true,
		why: "husky points core.hooksPath here: git runs these scripts at each commit"},
	{path: ".pre-commit-config.yaml", when: later, hook: true,
		why: "pre-commit's git hook runs the repositories and local commands listed here at each commit"},
	{path: "lefthook.*", when: later, hook: true,
		why: "lefthook's git hooks run the commands and scripts configured here (yml, yaml, toml, json, jsonc)"},
	{path: ".lefthook.*", when: later, hook: true,
		why: "lefthook's main config under its other name"},
	{path: "lefthook-local.*", when: later, hook: true,
		why: "lefthook merges this local config into the main one, its lefthook: key names the program git hooks start"},
	{path: ".lefthook-local.*", when: later, hook: true,
		why: "lefthook's local config under its other name"},
	{path: ".config/lefthook.*", when: later, hook: true,
		why: "lefthook also looks for its main config in .config/"},
	{path: ".config/lefthook-local.*", when: later, hook: true,
		why: "lefthook also looks for its local config in .config/"},
	{path: ".lefthook/", when: later, hook: true,
		why: "lefthook runs the scripts in .lefthook/<hook>/ from its git hooks"},
	{path: ".lefthook-local/", when: later, hook: true,
		why: "lefthook runs the scripts in .lefthook-local/<hook>/ from its git hooks"},
	{path: ".lintstagedrc*", when: later, hook: true,
		why: "lint-staged, run by a pre-commit hook, runs the commands in its config; a .js, .mjs, .cjs or .ts config is itself code"},
	{path: "lint-staged.config.*", when: later, hook: true,
		why: "lint-staged's config under its other name; always code"},
	{path: ".commitlintrc*", when: later, hook: true,
		why: "commitlint, run by a commit-msg hook, loads its config; a .js, .mjs, .cjs or .ts config is code run at each commit"},
	{path: "commitlint.config.*", when: later, hook: true,
		why: "commitlint's config under its other name; always code"},
	{path: ".simple-git-hooks.*", when: later, hook: true,
		why: "simple-git-hooks writes the commands configured here into .git/hooks when it runs (npx simple-git-hooks, or a postinstall at the next npm install); its package.json key cannot be protected, package.json being the project's own file"},
	{path: "simple-git-hooks.*", when: later, hook: true,
		why: "simple-git-hooks' config under its other name"},
	{path: ".overcommit.yml", when: later, hook: true, noStandIn: "overcommit asks to sign a new config at every commit",
		why: "overcommit's git hooks run the hooks configured here; it asks to sign a changed config, which is easy to do unread"},

	// Tool-version managers: code at the next shell prompt or tool command.
	{path: "mise.toml", when: live,
		why: "mise, activated in the shell, runs [hooks] enter and cd and [env] _.source scripts at the next prompt in the project; outside paranoid mode its trust is by path, so a trusted file stays trusted when rewritten"},
	{path: ".mise.toml", when: live, why: "mise's project config under its other name"},
	{path: "mise.local.toml", when: live, why: "mise's local project config, merged over mise.toml"},
	{path: ".mise.local.toml", when: live, why: "mise's local project config under its other name"},
	{path: "mise.*.toml", when: live, why: "mise's per-environment configs (MISE_ENV)"},
	{path: ".mise.*.toml", when: live, why: "mise's per-environment configs under their other name"},
	{path: ".mise/", when: live, why: "mise reads .mise/config.toml like mise.toml"},
	{path: "mise/config.toml", when: live, why: "mise reads mise/config.toml like mise.toml"},
	{path: ".config/mise.toml", when: live, why: "mise reads .config/mise.toml like mise.toml"},
	{path: ".config/mise/", when: live, why: "mise reads .config/mise/config.toml and conf.d/*.toml like mise.toml"},
	{path: ".miserc.toml", when: live, why: "mise reads the default MISE_ENV here, choosing which configs it loads"},
	{path: ".tool-versions", when: live,
		why: "asdf and mise: a path: version makes the shims run the program from that directory at the next node, python, ... in the project, without asking"},
	{path: "rust-toolchain.toml", when: live, noStandIn: emptyRefused,
		why: "rustup's proxies (cargo, rustc, and the rust-analyzer an editor starts on open) run the toolchain at the absolute path named here"},
	{path: "rust-toolchain", when: live, noStandIn: emptyRefused,
		why: "rustup's toolchain file under its older name"},
	{path: ".python-version", when: later, noStandIn: emptyRefused,
		why: "uv takes an interpreter path here and runs it at the next uv sync, uv pip or uv run; pyenv once followed ../ out of its versions (CVE-2022-35861)"},

	// Package managers' project configs that name a program to run.
	{path: ".yarnrc.yml", when: later,
		why: "yarn 2+ runs the release at yarnPath and loads the plugins listed here at every yarn command in the project, yarn --version included"},
	{path: ".yarnrc", when: later, why: "yarn 1 runs the yarn-path named here at every yarn command"},
	{path: ".yarn/releases/", when: later, why: "the yarn release .yarnrc.yml's yarnPath names: every yarn command runs it"},
	{path: ".yarn/plugins/", when: later, why: "the yarn plugins .yarnrc.yml lists: every yarn command loads them"},
	{path: ".pnpmfile.cjs", when: later,
		why: "pnpm runs its hooks (readPackage, afterAllResolved) at every pnpm install"},
	{path: ".pnpmfile.mjs", when: later, noStandIn: "pnpm prefers .pnpmfile.mjs to .pnpmfile.cjs, so an empty one would hide the project's hooks",
		why: "pnpm's hook file in its ESM form"},
	{path: "pnpm-workspace.yaml", when: later, noStandIn: "an empty one makes the directory a pnpm workspace root",
		why: "pnpm reads its settings here (pnpmfile, configDependencies that bring a pnpmfile, onlyBuiltDependencies and dangerouslyAllowAllBuilds that let install scripts run) at every pnpm install: the power of the masked .npmrc"},
	{path: "bunfig.toml", when: later,
		why: "bun runs the preload scripts named here before every bun run and bun test, of other packages' scripts too"},
	{path: ".cargo/config.toml", when: live, noStandIn: "cargo prefers .cargo/config when both exist",
		why: "cargo runs build.rustc-wrapper, build.rustc, target runners and linkers named here for every build in the directory: cargo install of another crate, and the cargo check rust-analyzer runs when an editor opens the project"},
	{path: ".cargo/config", when: live, noStandIn: "cargo prefers .cargo/config to .cargo/config.toml, so an empty one would hide the project's settings",
		why: "cargo's config under its older name"},
	{path: ".mvn/extensions.xml", when: later, noStandIn: emptyRefused,
		why: "Maven downloads and loads the core extensions listed here at every mvn command in the project"},
	{path: ".mvn/jvm.config", when: later,
		why: "mvn starts its JVM with these options (a -javaagent runs first) at every mvn command in the project, mvn -v included"},
	{path: ".mvn/maven.config", when: later,
		why: "mvn adds these options to every command (-Dmaven.ext.class.path loads extra jars)"},

	// Editors and IDEs: code when the project is opened, or at once.
	{path: ".vscode/", when: live,
		why: "VS Code runs tasks with runOn folderOpen, launch configs, and programs named in settings (terminal profiles, linters, language servers)"},
	{path: "*.code-workspace", when: live,
		why: "a VS Code workspace file holds settings, tasks (runOn folderOpen) and launch configs like .vscode/"},
	{path: ".devcontainer/", when: live,
		why: "VS Code and the devcontainer CLI run initializeCommand on the host before building the container"},
	{path: ".devcontainer.json", when: live, noStandIn: "VS Code offers to reopen the folder in a container that an empty config cannot build",
		why: "the devcontainer config at the top level: initializeCommand runs on the host"},
	{path: ".idea/", when: live,
		why: "JetBrains IDEs run startup tasks, external tools and run configurations stored here"},
	{path: ".fleet/", when: live, why: "JetBrains Fleet runs the run configurations and settings stored here"},
	{path: ".zed/", when: live,
		why: "Zed reads settings.json (language server and formatter commands) and tasks.json at once"},
	{path: ".helix/", when: live,
		why: "Helix starts the language servers and formatters that .helix/languages.toml names when it opens the project"},
	{path: ".nvim.lua", when: live, noStandIn: trustPrompt,
		why: "Neovim with 'exrc' runs it at start (it asks once per new or changed file)"},
	{path: ".nvimrc", when: live, noStandIn: trustPrompt, why: "Neovim's exrc file under its Vimscript name"},
	{path: ".exrc", when: live, noStandIn: trustPrompt, why: "Vim and Neovim with 'exrc' source it at start"},
	{path: ".vimrc", when: live, why: "Vim with 'exrc' sources .vimrc from the directory it starts in"},
	{path: ".gvimrc", when: live, why: "gVim with 'exrc' sources .gvimrc from the directory it starts in"},
	{path: ".dir-locals.el", when: live,
		why: "Emacs applies these variables to every file opened below (eval forms run once confirmed, and stay confirmed)"},
	{path: ".dir-locals-2.el", when: live, why: "Emacs' second directory-locals file"},
	{path: "*.sublime-project", when: live,
		why: "Sublime Text's project file holds build systems and settings that name programs (LSP servers)"},
	{path: ".theia/", when: live, why: "Eclipse Theia reads settings, tasks and launch configs here like VS Code"},
	{path: ".project", when: live, noStandIn: emptyRefused,
		why: "Eclipse runs the external tool builders a .project lists at every build, auto-build included"},
	{path: ".externalToolBuilders/", when: live,
		why: "the launch configurations of Eclipse's external tool builders: the programs a build runs"},

	// Agents: instructions and settings another agent outside the sandbox
	// follows (MCP servers and hooks it starts, commands it may run).
	{path: ".mcp.json", when: live, why: "Claude Code and others start the MCP servers listed here"},
	{path: ProjectFile, when: live, why: "stockade's own project config: it may only tighten, but must not be rewritten from inside"},
	{path: ".stockaderc", when: later,
		why: "masked when it exists; protected so that a missing one gets a placeholder: a planted key file would reroute the user's requests"},
	{path: "CLAUDE.md", when: live, why: "Claude Code's project instructions"},
	{path: "CLAUDE.local.md", when: live, why: "Claude Code's local project instructions"},
	{path: ".claude/", when: live, why: "Claude Code's settings (hooks it runs, permissions), commands, agents and skills"},
	{path: "AGENTS.md", when: live, why: "the instructions Codex, opencode, Cursor, Zed, Amp and others follow"},
	{path: "AGENTS.override.md", when: live, noStandIn: "Codex reads it instead of AGENTS.md",
		why: "Codex's instructions that take the place of AGENTS.md"},
	{path: "AGENT.md", when: live, noStandIn: zedFirstMatch, why: "Amp's and Zed's instructions"},
	{path: ".agents/", when: live, why: "skills and instructions that several agents (Codex, Amp) load"},
	{path: ".codex/", when: live, why: "Codex's project config: MCP servers, hooks, profiles"},
	{path: "GEMINI.md", when: live, why: "Gemini CLI's instructions"},
	{path: ".gemini/", when: live, why: "Gemini CLI's settings (MCP servers, tool permissions) and commands"},
	{path: ".opencode/", when: live, why: "opencode's agents, commands and plugins (plugins are code it loads)"},
	{path: "opencode.json", when: live, why: "opencode's config: MCP servers, permissions, formatters and LSP commands"},
	{path: "opencode.jsonc", when: live, noStandIn: "an empty file is not valid JSONC", why: "opencode's config with comments"},
	{path: ".cursor/", when: live,
		why: "Cursor's rules, mcp.json (servers it starts), hooks.json (commands around every agent step), commands, cli.json permissions and worktrees.json setup commands"},
	{path: ".cursorrules", when: live, why: "Cursor's older instruction file, also read by Zed"},
	{path: ".windsurf/", when: live, why: "Windsurf's rules and workflows"},
	{path: ".windsurfrules", when: live, why: "Windsurf's older instruction file, also read by Zed"},
	{path: ".clinerules", when: live, why: "Cline's rules: a file, or a directory with workflows and hook scripts it runs"},
	{path: ".roo/", when: live, why: "Roo Code's rules, commands and mcp.json"},
	{path: ".roomodes", when: live, why: "Roo Code's custom modes: their instructions and tool permissions"},
	{path: ".roorules", when: live, why: "Roo Code's instruction file"},
	{path: ".roorules-*", when: live, why: "Roo Code's per-mode instruction files"},
	{path: ".kilocode/", when: live, why: "Kilo Code's rules, workflows and mcp.json"},
	{path: ".kilocodemodes", when: live, why: "Kilo Code's custom modes"},
	{path: ".continue/", when: live, why: "Continue's rules, prompts, config and MCP servers"},
	{path: ".continuerc.json", when: live, why: "Continue's project settings"},
	{path: ".continuerules", when: live, why: "Continue's older instruction file"},
	{path: ".aider.conf.yml", when: later, why: "Aider runs its test-cmd and lint-cmd (after each edit with auto-lint) from here"},
	{path: ".github/copilot-instructions.md", when: live, why: "GitHub Copilot's instructions, also read by Zed"},
	{path: ".github/instructions/", when: live, why: "GitHub Copilot's per-path instructions"},
	{path: ".github/prompts/", when: live, why: "GitHub Copilot's prompt files"},
	{path: ".github/chatmodes/", when: live, why: "GitHub Copilot's chat modes: instructions and tool sets"},
	{path: ".github/agents/", when: live, why: "GitHub Copilot's custom agents"},
	{path: ".github/hooks/", when: live, why: "Copilot CLI runs the commands in .github/hooks/*.json around every session and tool use"},
	{path: ".github/skills/", when: live, why: "GitHub Copilot's skills"},
	{path: ".amazonq/", when: live, why: "Amazon Q Developer's rules, agents and MCP servers"},
	{path: ".kiro/", when: live, why: "Kiro's steering, hooks (commands run on file events) and settings/mcp.json"},
	{path: ".junie/", when: live, why: "JetBrains Junie's guidelines and MCP servers"},
	{path: ".aiassistant/", when: live, why: "JetBrains AI Assistant's rules"},
	{path: ".goosehints", when: live, why: "Goose's instructions"},
	{path: ".augment/", when: live, why: "Augment's rules and commands"},
	{path: ".augment-guidelines", when: live, why: "Augment's older instruction file"},
	{path: ".trae/", when: live, why: "Trae's rules and MCP servers"},
	{path: ".zencoder/", when: live, why: "Zencoder's rules, which its agent follows"},
	{path: ".openhands/", when: later, why: "OpenHands runs setup.sh at the start of every session, pre-commit.sh and hooks.json commands, and loads its microagents"},
	{path: "CRUSH.md", when: live, why: "Crush's instructions"},
	{path: ".crush.json", when: live, why: "Crush's project config: LSP and MCP commands it starts"},
	{path: "crush.json", when: live, why: "Crush's project config under its other name"},
	{path: "QWEN.md", when: live, why: "Qwen Code's instructions"},
	{path: ".qwen/", when: live, why: "Qwen Code's settings (MCP servers, tool permissions) and commands"},
	{path: "WARP.md", when: live, why: "Warp's agent instructions"},
	{path: ".rules", when: live, noStandIn: zedFirstMatch, why: "Zed's project instructions, read before any other name"},
}

// protectPaths and hookPathsOf derive the lists the rest of the package uses
// from protectTable.
func protectPaths() []string {
	out := make([]string, 0, len(protectTable))
	for _, e := range protectTable {
		out = append(out, e.path)
	}
	return out
}

func hookPathsOf() []string {
	var out []string
	for _, e := range protectTable {
		if e.hook {
			out = append(out, e.path)
		}
	}
	return out
}

// NoPlaceholders are the built-in protected names that get no placeholder
// when missing: those whose empty stand-in would mislead their tool
// (NoPlaceholder), and those not in heldWhenMissing.
func NoPlaceholders() []string {
	var out []string
	for _, e := range protectTable {
		if e.noStandIn != "" || !heldWhenMissing[e.path] {
			out = append(out, e.path)
		}
	}
	return out
}

// heldWhenMissing are the protected names that, when missing at start, get
// a placeholder for the run, so that the command cannot create them at all:
// those that the most used tools read while a session runs beside them (an
// open VS Code or JetBrains IDE, Claude Code, Codex, Gemini CLI or Cursor
// in another terminal, mise's hook at the shell prompt, a git commit in
// another terminal). Every placeholder costs each start two renames on the
// host and a mount in init (about a tenth of a millisecond). The others,
// when the command creates them, are moved aside when it ends, with a
// QUARANTINED line (mount.Scan.Created); until then a tool on the host that
// reads one may see it.
var heldWhenMissing = map[string]bool{
	".git/hooks/": true, ".git/config": true, ".git/config.worktree": true, ".git/info/attributes": true,
	".gitmodules": true, ".husky/": true, ".pre-commit-config.yaml": true,
	"mise.toml": true, ".mise.toml": true,
	".devcontainer/": true, ".vscode/": true, ".idea/": true,
	".mcp.json": true, "CLAUDE.md": true, "CLAUDE.local.md": true, "AGENTS.md": true, "GEMINI.md": true,
	".claude/": true, ".codex/": true, ".gemini/": true, ".opencode/": true, "opencode.json": true,
	".cursor/": true, ".cursorrules": true, ".windsurfrules": true, ".clinerules": true,
	".github/copilot-instructions.md": true, ".stockaderc": true, ProjectFile: true,
}

// NoPlaceholder reports whether pattern is a built-in protected name that
// must not get an empty placeholder when it is missing, and why: an empty
// file there would change what its tool does. Such a name is checked at
// exit instead: what the command created there is moved aside. Patterns that are not built in get placeholders as usual.
func NoPlaceholder(pattern string) (string, bool) {
	for _, e := range protectTable {
		if e.path == pattern && e.noStandIn != "" {
			return e.noStandIn, true
		}
	}
	return "", false
}
