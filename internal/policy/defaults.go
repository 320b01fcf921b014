package policy

// The built-in policy. Every entry is relative to the workdir; a trailing "/"
// marks a directory and a "*" in any element is a glob.

// AdminPath is where the administrator's config file lives. Later layers may
// tighten its settings but never loosen them (see Resolve).
const AdminPath = "/etc/stockade/config.json"

// SlurmKey is the admin file's key for the Slurm chaperon's allowlist
// (package slurm reads it); no other layer may set it.
const SlurmKey = "slurm"

// ProjectFile is the name of the project's config file inside the workdir.
const ProjectFile = ".stockade.json"

// Default values for scalar settings.
const (
	DefaultLogLevel    = "warn"
	DefaultNetwork     = "proxy"
	DefaultAgentPolicy = "deny"
	DefaultTerminal    = "filtered"
	TerminalRaw        = "raw" // the terminal mode that loosens
	// DefaultPids is tighter than the kernel's default so a fork bomb in the
	// sandbox stops long before it hurts the host.
	DefaultPids = 4096
	// DefaultMemory bounds the sandbox's memory where a cgroup can enforce
	// it, and sizes its tmpfs mounts everywhere (TmpfsBudget): well below
	// the RAM of a developer's machine, well above what an agent and a
	// build need.
	DefaultMemory = 8 << 30
)

// TmpfsBudget is how much the writable tmpfs mounts of a sandbox (/tmp,
// /var with /var/tmp, /run, /dev/shm) may hold together: half of the memory
// limit. Pages in a tmpfs belong to no process, so without a bound the OOM
// killer would kill host processes to make room for them; with half, the
// sandbox's processes keep the other half, and a full tmpfs gives ENOSPC
// before a memory cgroup would OOM-kill anything.
func TmpfsBudget(memory int64) int64 { return memory / 2 }

// defaultProtect are read-only even inside the workdir: anything that runs
// code or steers an agent on the host after the sandbox exits. The table with
// a reason for each is protectTable (protected.go).
var defaultProtect = protectPaths()

// hookPaths are the defaultProtect entries that allow_hooks leaves writable:
// git hooks, and the files of the hook managers whose commands git hooks run.
var hookPaths = hookPathsOf()

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

// HeldMask are the masked names that host tools read from a project
// directory, so that one the agent plants acts on the host after the
// session: a missing one gets a placeholder (masked inside) like a missing
// protected path, and the agent cannot create it. The others (.netrc,
// .pgpass, .aws/, ...) are read from the user's home, where the agent
// cannot write; one planted in the project is inert.
var HeldMask = []string{
	".env",   // dotenv loaders, docker compose (COMPOSE_FILE, COMPOSE_PROJECT_NAME), Vite, Next.js
	".envrc", // direnv: loaded on cd once allowed
	".npmrc", // npm: node-options, script-shell, registry and tokens, read on every npm command
}

// Default returns the built-in policy for workdir. It never shares slices
// with the tables, so callers may modify the result.
func Default(workdir string) Policy {
	return Policy{
		Workdir:     workdir,
		Protect:     append([]string(nil), defaultProtect...),
		Mask:        append([]string(nil), defaultMask...),
		Pids:        DefaultPids,
		Memory:      DefaultMemory,
		LogLevel:    DefaultLogLevel,
		Network:     DefaultNetwork,
		AgentPolicy: DefaultAgentPolicy,
		Terminal:    DefaultTerminal,
	}
}

// logLevels and networks are the accepted values of log_level and network.
var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	networks   = []string{"proxy", "none"}
	agentModes = []string{"deny", "allow"}
	terminals  = []string{DefaultTerminal, TerminalRaw}
)
