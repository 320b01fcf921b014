// Package sandbox is the native backend: it starts a command in new user,
// mount, PID, network, IPC, UTS and cgroup namespaces and confines it.
//
// Two processes of this binary take part, then the command:
//
//	supervisor (outside)            init (PID 1 inside)                 command
//	   │ clone(CLONE_NEW*) ─────────▶ │
//	   │ spec (fd 3) ───────────────▶ │ hostname, lo up, build the root,
//	   │ cgroup: add init's pid       │ pivot_root
//	   │ ◀── pty master (fd 4) ────── │ (with a terminal: /dev/ptmx inside)
//	   │ "placed" (fd 4) ───────────▶ │ unshare(CLONE_NEWCGROUP)
//	   │                              │ no_new_privs, Landlock, drop caps,
//	   │                              │ seccomp (all threads)
//	   │                              │ fork+exec (fds 0-2 only) ──────────▶ │
//	   │ ◀─ "started" (fd 4) ──────── │
//	   │ ◀─ sync (fd 4): StepError ── │ (only if a step failed)
//	   │                              │ reap, forward signals
//	   │ ◀─ "quiet" (fd 4) ────────── │ command gone: kill and reap the rest
//	   │ ◀────────── exit status ──── │ the command's
//
// Init confines itself before it forks the command, which inherits every
// restriction; PID 1 is thus never more powerful than what it supervises,
// and no third process start is needed. Errors before the command's execve
// travel back as a StepError naming the step, the path and the errno, and
// init exits with ExitSetup. If the supervisor dies, init gets SIGKILL
// (PR_SET_PDEATHSIG) and also sees the sync socket close; as PID 1 its death
// takes the whole PID namespace with it.
package sandbox

import (
	"fmt"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
)

// Exit statuses of a sandbox that did not run its command to the end.
const (
	ExitSetup       = 125 // the sandbox could not be set up
	ExitNotExec     = 126 // the command exists but could not be executed
	ExitNotFound    = 127 // the command was not found
	ExitSignalBase  = 128 // 128+N: the command was killed by signal N
	initArg         = "__stockade_init"
	specFD          = 3 // init reads its spec here
	syncFD          = 4 // socket between init and the supervisor
	initStagingBase = "/tmp"
	msgPlaced       = 'P' // supervisor → init: you are in your cgroup
	msgQuiet        = 'Q' // init → supervisor: every process but init is gone
	msgStarted      = 'S' // init → supervisor: the command is running
	msgPTY          = 'T' // init → supervisor: the master of the command's pty (SCM_RIGHTS)
)

// Spec is everything init needs to build the sandbox and start the command.
type Spec struct {
	ID       string     `json:"id"`
	Hostname string     `json:"hostname"`
	Plan     mount.Plan `json:"plan"`
	Exec     ExecSpec   `json:"exec"`
}

// ExecSpec is what init needs to confine itself and start the command.
type ExecSpec struct {
	Argv     []string       `json:"argv"`
	Env      []string       `json:"env"`
	Cwd      string         `json:"cwd"`
	TTY      bool           `json:"tty"`
	Landlock landlock.Tiers `json:"landlock"`
	// MaxProcs caps the tasks (processes and threads) of the sandbox's uid
	// with RLIMIT_NPROC. Since Linux 5.14 that count is kept per user
	// namespace, so it is a per-sandbox pids limit that needs no cgroup and
	// works unprivileged. 0: no limit.
	MaxProcs int64 `json:"max_procs,omitempty"`
}

// StepError is a failure inside the sandbox before the command started.
type StepError struct {
	Step  string `json:"step"`
	Path  string `json:"path,omitempty"`
	Errno string `json:"errno,omitempty"`
	Msg   string `json:"msg"`
	Code  int    `json:"code"`
}

func (e *StepError) Error() string {
	return fmt.Sprintf("sandbox %s: %s", e.Step, e.Msg)
}

// Entrypoints are the re-executed stages of this binary, keyed by argv[1].
// cli.Run dispatches to them before parsing any flag.
var Entrypoints = map[string]func() int{
	initArg: initMain,
}
