// Package policy is the sandbox policy as pure data: the built-in defaults, the
// layering of config files, environment and flags on top of them, validation, and
// the list of settings that loosen the sandbox. It makes no system calls beyond
// reading config files and checking that named paths exist, so it builds and
// tests on any OS.
package policy

import "github.com/stockade-dev/stockade/internal/egress"

// Policy is the effective sandbox policy after layering. A zero value is never
// "less restricted": an unset limit means "no limit requested", and every
// loosening has a loud name (AllowHooks, Unmask, RW outside the workdir).
type Policy struct {
	// Workdir is the project directory, mounted read-write. Absolute, cleaned.
	Workdir string `json:"workdir"`
	// RO and RW are extra host paths bound read-only / read-write at the same path.
	RO []string `json:"ro,omitempty"`
	RW []string `json:"rw,omitempty"`
	// Protect lists paths kept read-only even inside the workdir. Relative
	// entries are relative to the workdir; a trailing "/" marks a directory.
	Protect []string `json:"protect"`
	// Mask lists paths that exist but read empty. Same conventions as Protect;
	// a "*" in the last element is a glob (".env.*").
	Mask []string `json:"mask"`
	// Unmask removes entries from Mask (loosening).
	Unmask []string `json:"unmask,omitempty"`
	// AllowHooks leaves git hooks and the hook managers' configs writable (loosening).
	AllowHooks bool `json:"allow_hooks"`
	// Env names host variables to pass (NAME) or sets them (NAME=VALUE).
	Env []string `json:"env,omitempty"`
	// Memory is the memory limit in bytes, DefaultMemory unless a layer sets
	// it; it also sizes the tmpfs mounts (TmpfsBudget). 0 means no limit.
	Memory int64 `json:"memory,omitempty"`
	// CPUs is the CPU limit in cores (1.5 = one and a half); 0 means none requested.
	CPUs float64 `json:"cpus,omitempty"`
	// Pids is the maximum number of tasks; 0 means none requested.
	Pids int64 `json:"pids,omitempty"`
	// LogLevel is one of debug, info, warn, error.
	LogLevel string `json:"log_level"`
	// Network is the network mode: "proxy" (the default: the sandbox reaches
	// the outside only through stockade's HTTP/SOCKS5 proxies and DNS stub,
	// under the agent policy below) or "none" (only lo, nothing else at all).
	Network string `json:"network"`
	// AgentPolicy is "deny" (the default: only AgentAllow goes out) or
	// "allow" (every public address; loosening).
	AgentPolicy string `json:"agent_policy"`
	// AgentAllow and AgentBlock are egress rules: a name, a *.suffix
	// wildcard, an IP or a CIDR, each with an optional :port. Block wins.
	// They are parsed when the policy loads (egress.ParseRule) and are
	// written in JSON as the user writes them.
	AgentAllow []egress.Rule `json:"agent_allow,omitempty"`
	AgentBlock []egress.Rule `json:"agent_block,omitempty"`
	// Resolver is the upstream DNS server the supervisor resolves with
	// (ADDR[:PORT]); empty means the host's.
	Resolver string `json:"resolver,omitempty"`
	// Terminal is "filtered" (the default: escape sequences that reach past
	// the screen, such as clipboard access and title reports, are dropped
	// from the command's output; see internal/termfilter) or "raw" (the
	// output reaches the user's terminal as written; loosening).
	Terminal string `json:"terminal"`
	// SharedHome gives every project one sandbox HOME per command instead
	// of one per project (loosening: what one project's command leaves in
	// it, a shell rc or an agent's hook, runs in the others' sessions).
	// Never from a project file.
	SharedHome bool `json:"shared_home"`
	// GitConfig copies the user's git identity and aliases into the
	// sandbox, sanitized (package gitconfig; loosening: it hands over who
	// the user is). Never from a project file.
	GitConfig bool `json:"gitconfig"`
	// Upstream sends auth proxy routes elsewhere: ROUTE=URL entries (a
	// company gateway, a local model server). Never from a project file.
	Upstream []string `json:"upstream,omitempty"`
}
