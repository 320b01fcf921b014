package policy

// The built-in policy. Every entry is relative to the workdir; a trailing "/"
// marks a directory and a "*" in any element is a glob.

// AdminPath is where the administrator's config file lives. Later layers may
// tighten its settings but never loosen them (see Resolve).
const AdminPath = "/etc/stockade/config.json"

// ProjectFile is the name of the project's config file inside the workdir.
const ProjectFile = ".stockade.json"

// Default values for scalar settings.
const (
	DefaultLogLevel    = "warn"
	DefaultNetwork     = "proxy"
	DefaultAgentPolicy = "deny"
	// DefaultPids is tighter than the kernel's default so a fork bomb in the
	// sandbox stops long before it hurts the host.
	DefaultPids = 4096
)

// defaultProtect are read-only even inside the workdir: anything that runs
// code or steers an agent on the host after the sandbox exits (git hooks and
// config, editor and devcontainer tasks, agent instruction files, MCP config,
// stockade's own project config).
var defaultProtect = []string{
	".git/hooks/",
	".git/config",
	// More of what git reads from the repository, and so from the sandboxed
	// command if it may write it (after the session internal/gitguard checks
	// these again, and every nested repository; see docs/sandbox.md, "Git
	// metadata"). The per-worktree configuration, read when
	// extensions.worktreeConfig is set; its placeholder, an empty file, is
	// an empty configuration.
	".git/config.worktree",
	// Attributes that pick filter, diff and merge drivers, which run programs.
	".git/info/attributes",
	// Each submodule's git directory: git status runs the fsmonitor of its
	// configuration, git submodule update and checkout its hooks.
	".git/modules/*/config",
	".git/modules/*/hooks/",
	// Each linked worktree's git directory: commondir says where git takes
	// its configuration and hooks from; config.worktree adds to them. A
	// glob gets no placeholder: an empty commondir would break git.
	".git/worktrees/*/commondir",
	".git/worktrees/*/config.worktree",
	// Not here: .git/commondir. git never writes one in a repository's own
	// git directory, and no placeholder can stand in for a missing one (git
	// refuses an empty commondir), so gitguard moves a new one aside after
	// the session. Objects, refs, the index, logs and HEAD stay writable:
	// commit, checkout -b, stash, merge and rebase work inside.
	".gitmodules",
	".husky/",
	".pre-commit-config.yaml",
	".devcontainer/",
	".vscode/",
	".idea/",
	".mcp.json",
	ProjectFile,
	"CLAUDE.md",
	"CLAUDE.local.md",
	"AGENTS.md",
	"GEMINI.md",
	".claude/",
	".codex/",
	".gemini/",
	".opencode/",
	"opencode.json",
	".cursor/rules/",
	".cursor/mcp.json",
	".cursorrules",
	".windsurfrules",
	".clinerules",
	".github/copilot-instructions.md",
	// Masked when it exists; protected so that a missing one gets a
	// placeholder: a planted key file would reroute the user's requests.
	".stockaderc",
}

// hookPaths are the defaultProtect entries that allow_hooks leaves writable:
// directories whose scripts git runs on the host.
var hookPaths = []string{".git/hooks/", ".git/modules/*/hooks/", ".husky/"}

// defaultMask read empty: files that commonly hold credentials.
var defaultMask = []string{
	".env",
	".env.*",
	".envrc",
	".npmrc",
	".netrc",
	".pgpass",
	".pypirc",
	".aws/",
	".azure/",
	".kube/",
	".docker/config.json",
	".cargo/credentials",
	".cargo/credentials.toml",
	".gem/credentials",
	".terraformrc",
	".terraform.d/credentials.tfrc.json",
	".vault-token",
	".boto",
	".s3cfg",
	".stockaderc",
	".git-credentials",
	".ssh/",
	".gnupg/",
}

// Default returns the built-in policy for workdir. It never shares slices
// with the tables, so callers may modify the result.
func Default(workdir string) Policy {
	return Policy{
		Workdir:     workdir,
		Protect:     append([]string(nil), defaultProtect...),
		Mask:        append([]string(nil), defaultMask...),
		Pids:        DefaultPids,
		LogLevel:    DefaultLogLevel,
		Network:     DefaultNetwork,
		AgentPolicy: DefaultAgentPolicy,
	}
}

// logLevels and networks are the accepted values of log_level and network.
var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	networks   = []string{"proxy", "none"}
	agentModes = []string{"deny", "allow"}
)
