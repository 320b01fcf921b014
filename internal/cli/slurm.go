package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
	"github.com/stockade-dev/stockade/internal/slurm"
)

// slurmFlags give a sandbox the Slurm chaperon (package slurm).
type slurmFlags struct {
	Slurm bool `help:"Give the sandbox Slurm: sbatch, srun, squeue, sacct, scancel, scontrol, sinfo are answered by a chaperon outside it, which checks every submission against an allowlist and runs every job under 'stockade run' with this policy on the compute node."`
	// SlurmStep is set by a job's wrapper on the compute node (slurm
	// writeWrapper): the chaperon answers only srun, as a step of the job
	// in SLURM_JOB_ID (step mode).
	SlurmStep  bool   `name:"slurm-step" hidden:"" help:"Inside a Slurm job (SLURM_JOB_ID set): srun starts steps of this job only, under this policy."`
	SlurmScope string `name:"slurm-scope" help:"Whose jobs squeue, sacct, scontrol and scancel reach, among those submitted through stockade: this session's (default), this project's or this user's." placeholder:"session|project|user"`
}

// maxShebang is the most of a #! line Linux reads (BINPRM_BUF_SIZE).
const maxShebang = 256

// shimDir is where a --slurm sandbox finds its Slurm commands, in its
// HOME, first on its PATH.
const shimDir = ".local/share/stockade/slurm/bin"

// check checks the Slurm flags, with the policy's network mode, before
// anything is set up.
func (f slurmFlags) check(network string) error {
	switch {
	case f.Slurm && network != "proxy":
		return usageError{errors.New("--slurm needs --network proxy: the chaperon's socket is handed in beside the proxies")}
	case f.SlurmScope != "" && !slices.Contains(slurm.Scopes, f.SlurmScope):
		return usageError{fmt.Errorf("--slurm-scope %q: write session, project or user", f.SlurmScope)}
	case f.SlurmScope != "" && !f.Slurm:
		return usageError{errors.New("--slurm-scope needs --slurm")}
	case f.SlurmStep && !f.Slurm:
		return usageError{errors.New("--slurm-step needs --slurm")}
	case f.SlurmStep && !isJobID(os.Getenv("SLURM_JOB_ID")):
		return usageError{fmt.Errorf("--slurm-step: SLURM_JOB_ID %q is not a job id; --slurm-step is for a job's wrapper, inside a Slurm job", os.Getenv("SLURM_JOB_ID"))}
	}
	return nil
}

// slurmState is the chaperon's directory for the user whose HOME is
// home: the registry of jobs, and each job's stored script and wrapper.
func slurmState(home string) string { return filepath.Join(stateHome(home), "stockade", "slurm") }

// checkState refuses --slurm when the chaperon's directory is one the
// sandbox can write: the project, a --rw tree, or the sandbox HOME (whose
// host path is sandboxHome), or holds one of them. A job's wrapper is
// written there and runs on the compute node outside any sandbox, as the
// user, before its `stockade run`; an agent that could rewrite it between
// sbatch and the job's start would run anything there. Called before
// anything is made.
func (f slurmFlags) checkState(p policy.Policy, home, sandboxHome string) error {
	if !f.Slurm {
		return nil
	}
	state := slurmState(home)
	canon := existingCanon(state)
	var writable []string
	for _, d := range append(append([]string{p.Workdir}, p.RW...), sandboxHome) {
		if d == "" {
			continue
		}
		c := existingCanon(d)
		writable = append(writable, c)
		if canonWithin(canon, c) || canonWithin(c, canon) {
			return usageError{fmt.Errorf("--slurm: the chaperon's directory %s, where the jobs' wrappers are written, overlaps %s, which the sandbox can write; set XDG_STATE_HOME to a directory outside the project and every --rw tree", state, d)}
		}
	}
	// A link among the chaperon's own directories leads it to a directory
	// that an earlier sandbox chose, which the overlap check above cannot
	// see is another session's tree.
	for _, rel := range []string{"stockade", "stockade/slurm", "stockade/slurm/jobs"} {
		at := filepath.Join(stateHome(home), rel)
		if fi, err := os.Lstat(at); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			to, _ := os.Readlink(at)
			return usageError{fmt.Errorf("--slurm: %s is a symbolic link (to %s), where the chaperon keeps the jobs' registry and directories; remove the link (rm %s)", at, to, at)}
		}
	}
	// Every job starts this binary on the compute node, outside any
	// sandbox: a binary its owner can rewrite could be rewritten by any
	// session whose tree holds it (a project that builds stockade, a --rw
	// ~/go) before a queued job starts.
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("--slurm: finding the stockade binary the jobs run: %w", err)
	}
	if err := slurm.Trusted(exe, writable); err != nil {
		return usageError{fmt.Errorf("--slurm: every job runs the stockade binary %s on the compute node outside any sandbox, and it could be rewritten there (%v); install it where only root can write, on a path the nodes share (as root: install -m 0755 %s /usr/local/bin/)", exe, err, exe)}
	}
	return nil
}

// slurmJob adds the chaperon to j: its configuration, the shims on the
// sandbox's PATH, and the stockade binary they run, read-only.
func (c *runCmd) slurmJob(j *job.Job, r policy.Resolved, h *sandboxhome.Home) error {
	scope := c.SlurmScope
	if scope == "" {
		scope = slurm.ScopeSession
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the stockade binary for the Slurm jobs: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("finding the stockade binary for the Slurm jobs: %w", err)
	}
	shebang := "#!" + exe + " " + slurm.Entry + "\n"
	switch {
	case strings.ContainsAny(exe, " \t\n"):
		return fmt.Errorf("the stockade binary %s has white space in its path, which a script's #! line cannot hold; install it elsewhere for --slurm", exe)
	case len(shebang) > maxShebang:
		return fmt.Errorf("the stockade binary's path %s is too long for a script's #! line (%d bytes, the kernel reads %d); install it at a shorter path for --slurm", exe, len(shebang), maxShebang)
	}
	admin, err := slurm.LoadAdmin(policy.AdminPath)
	if err != nil {
		return err
	}
	j.Slurm = &slurm.Config{
		Session: j.ID, Workdir: j.Policy.Workdir, Scope: scope, Stockade: exe,
		RunArgs: runArgs(j.Policy, r), Network: slurm.NetworkArgs(egress.NewRules(egress.Mode(j.Policy.AgentPolicy), j.Policy.AgentAllow, j.Policy.AgentBlock).Snapshot()),
		State: existingCanon(slurmState(j.Home)), // canonical: a job's wrapper checks its directory against it
		Env:   slurmEnv(os.Environ()), Admin: admin,
	}
	for _, d := range append([]string{j.Policy.Workdir, h.Path}, j.Policy.RW...) {
		if d != "" {
			j.Slurm.Writable = append(j.Slurm.Writable, existingCanon(d))
		}
	}
	if c.SlurmStep {
		j.Slurm.Step = os.Getenv("SLURM_JOB_ID") // slurmd's, checked by check
	}
	for _, name := range slurm.Commands {
		rel := shimDir + "/" + name
		if err := h.WriteShim(rel, shebang); err != nil {
			return err
		}
		j.HomeProtect = append(j.HomeProtect, rel)
	}
	if !slices.Contains(j.Policy.RO, exe) {
		j.Policy.RO = append(j.Policy.RO, exe)
	}
	j.Env = setEnv(j.Env, "PATH", filepath.Join(j.Home, shimDir)+":"+getEnv(j.Env, "PATH"))
	return nil
}

// runArgs are the flags of `stockade run` that give a job the policy p.
// A limit goes on only when a flag or a variable set it: the job's run
// reads the same config files, and a flag makes a limit one set on
// purpose, which refuses to start where it cannot be enforced.
func runArgs(p policy.Policy, r policy.Resolved) []string {
	onPurpose := func(key string) bool {
		src := r.Sources[key]
		return strings.HasPrefix(src, "flag ") || strings.HasPrefix(src, "env ")
	}
	a := []string{"--workdir", p.Workdir}
	add := func(flag string, vals []string) {
		for _, v := range vals {
			a = append(a, flag, v)
		}
	}
	add("--ro", p.RO)
	add("--rw", p.RW)
	add("--protect", p.Protect)
	add("--mask", p.Mask)
	add("--unmask", p.Unmask)
	add("--env", p.Env)
	a = append(a, "--network", p.Network) // the rules: slurm.NetworkArgs
	if p.Memory > 0 && onPurpose("memory") {
		a = append(a, "--memory", strconv.FormatInt(p.Memory/1024, 10)+"k")
	}
	if p.CPUs > 0 && onPurpose("cpus") {
		a = append(a, "--cpus", strconv.FormatFloat(p.CPUs, 'g', -1, 64))
	}
	if p.Pids > 0 && onPurpose("pids") {
		a = append(a, "--pids", strconv.FormatInt(p.Pids, 10))
	}
	if p.Resolver != "" {
		a = append(a, "--resolver", p.Resolver)
	}
	if p.AllowHooks {
		a = append(a, "--allow-hooks")
	}
	if p.SharedHome {
		a = append(a, "--shared-home")
	}
	return a
}

// isJobID reports whether s is a plain Slurm job id.
func isJobID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// slurmEnv is the environment of the real Slurm commands: what they and
// the job's stockade need to find the cluster and the user's state, and
// nothing else of the user's (no keys).
func slurmEnv(environ []string) []string {
	keep := []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "SLURM_CONF",
		"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(keep, k) || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}
