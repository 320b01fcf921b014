package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/internal/policy"
)

// policyFlags are the flags that feed the policy, shared by run and policy show.
type policyFlags struct {
	Workdir    *string  `help:"Project directory, mounted read-write (default: the current directory)." placeholder:"DIR"`
	RO         []string `sep:"none" name:"ro" help:"Bind PATH read-only (and executable) at the same path; repeatable." placeholder:"PATH"`
	RW         []string `sep:"none" name:"rw" help:"Bind PATH read-write at the same path; repeatable. Loosens the sandbox when outside the workdir." placeholder:"PATH"`
	Protect    []string `sep:"none" help:"Keep PATH read-only even inside the workdir (relative to the workdir); repeatable." placeholder:"PATH"`
	Mask       []string `sep:"none" help:"Make PATH read empty inside (relative to the workdir; a * in the last element is a glob); repeatable." placeholder:"PATH"`
	Unmask     []string `sep:"none" help:"Remove PATH from the masked paths; loosens the sandbox; repeatable." placeholder:"PATH"`
	AllowHooks *bool    `name:"allow-hooks" help:"Leave git hooks and hook managers' configs (.husky, lefthook, ...) writable; loosens the sandbox."`
	SharedHome *bool    `name:"shared-home" help:"One sandbox HOME per command for every project, instead of one per project; loosens the sandbox."`
	GitConfig  *bool    `name:"gitconfig" help:"Give the sandbox your git identity (user.name, user.email) and aliases, read-only, without credential helpers or anything that runs code; loosens the sandbox."`
	Env        []string `sep:"none" help:"Pass host variable NAME, or set NAME=VALUE, inside; the only way a credential-shaped name gets in; repeatable." placeholder:"NAME[=VALUE]"`
	Memory     *string  `help:"Memory limit with a unit k, m, g or t (e.g. 4g; default 8g); the tmpfs mounts get half of it. Refuses to start where it cannot be enforced." placeholder:"SIZE"`
	CPUs       *string  `name:"cpus" help:"CPU limit in cores (e.g. 1.5; default none). Refuses to start where it cannot be enforced." placeholder:"N"`
	Pids       *string  `help:"Maximum number of processes and threads (default 4096)." placeholder:"N"`
	LogLevel   *string  `name:"log-level" help:"debug, info, warn (default) or error." placeholder:"LEVEL"`

	Network     *string  `help:"proxy (default: out only through stockade's proxies and DNS stub) or none (loopback only)." placeholder:"MODE"`
	AgentPolicy *string  `name:"agent-policy" help:"deny (default: only --agent-allow goes out) or allow (every public address; loosening)." placeholder:"deny|allow"`
	AgentAllow  []string `name:"agent-allow" sep:"," help:"Allow HOST, *.SUFFIX, IP or CIDR, with an optional :PORT, or a preset (@npm, @pypi, @go, @crates, @rubygems, @maven, @debian, @github); repeatable or comma-separated." placeholder:"RULE"`
	AgentBlock  []string `name:"agent-block" sep:"," help:"Block a host, wildcard, IP or CIDR (wins over allow); repeatable or comma-separated." placeholder:"RULE"`
	Resolver    *string  `help:"Upstream DNS server the supervisor resolves with (default: the host's)." placeholder:"ADDR[:PORT]"`

	Terminal *string `help:"filtered (default: drop the escape sequences that reach past the screen, such as clipboard access, title reports and notifications, from the command's output) or raw (pass them; loosening)." placeholder:"filtered|raw"`
}

// resolve layers defaults, config files, STOCKADE_* and these flags, and
// validates the result.
func (f policyFlags) resolve() (policy.Resolved, string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return policy.Resolved{}, "", fmt.Errorf("reading the current directory: %w", err)
	}
	r, err := policy.Load(policy.Options{
		Paths:   policy.DefaultPaths(os.Getenv),
		Environ: os.Environ(),
		Cwd:     cwd,
		Flags: policy.Flags{
			RO: f.RO, RW: f.RW, Protect: f.Protect, Mask: f.Mask, Unmask: f.Unmask, Env: f.Env,
			AllowHooks: f.AllowHooks, SharedHome: f.SharedHome, GitConfig: f.GitConfig, Memory: f.Memory, CPUs: f.CPUs, Pids: f.Pids,
			LogLevel: f.LogLevel, Workdir: f.Workdir,
			Network: f.Network, AgentPolicy: f.AgentPolicy, AgentAllow: f.AgentAllow,
			AgentBlock: f.AgentBlock, Resolver: f.Resolver, Terminal: f.Terminal,
		},
	})
	if fe := (policy.FlagError{}); errors.As(err, &fe) {
		return policy.Resolved{}, "", usageError{err}
	}
	if err != nil {
		return policy.Resolved{}, "", err
	}
	home := realHome()
	if err := r.Validate(home, os.Stat); err != nil {
		return policy.Resolved{}, "", err
	}
	return r, home, nil
}

// realHome is the invoking user's home directory on the host.
func realHome() string {
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	return ""
}

// dataHome is $XDG_DATA_HOME, or ~/.local/share.
func dataHome(home string) string {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(home, ".local", "share")
}

// stateHome is $XDG_STATE_HOME, or ~/.local/state.
func stateHome(home string) string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(home, ".local", "state")
}
