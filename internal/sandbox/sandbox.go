// Package sandbox is the native backend: it starts a command in new user,
// mount, PID, network, IPC, UTS and cgroup namespaces and confines it.
//
// Three processes take part, all of them this binary:
//
//	supervisor (outside)         init (PID 1 inside)              exec stage → agent
//	   │ clone(CLONE_NEW*) ───────▶ │
//	   │ (cgroup: add init pid)     │
//	   │ spec (fd 3) ─────────────▶ │ hostname, lo up, build root,
//	   │                            │ pivot_root
//	   │                            │ fork+exec ────────────────────▶ │ no_new_privs
//	   │                            │ exec spec (fd 3) ─────────────▶ │ Landlock
//	   │                            │                                 │ close fds (cloexec)
//	   │                            │                                 │ drop caps
//	   │                            │                                 │ seccomp (TSYNC)
//	   │                            │ ◀──── status (fd 4): EOF = ok ─ │ execve(agent)
//	   │ ◀─ sync (fd 4): error ──── │ restrict itself, reap, forward
//	   │    or nothing              │ signals; exit with the agent's
//	   │ ◀──────── exit status ──── │ status
//
// Errors before the agent's execve travel back as a StepError naming the
// step, the path and the errno, and init exits with ExitSetup. If the
// supervisor dies, init gets SIGKILL (PR_SET_PDEATHSIG) and also sees the sync
// socket close; as PID 1 its death takes the whole PID namespace with it.
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
	execArg         = "__stockade_exec"
	specFD          = 3 // init and exec stage read their spec here
	syncFD          = 4 // init: socket to the supervisor; exec stage: status pipe
	initStagingBase = "/tmp"
)

// Spec is everything init needs to build the sandbox and start the command.
type Spec struct {
	ID       string     `json:"id"`
	Hostname string     `json:"hostname"`
	Plan     mount.Plan `json:"plan"`
	Exec     ExecSpec   `json:"exec"`
}

// ExecSpec is what the exec stage needs to confine itself and exec the command.
type ExecSpec struct {
	Argv     []string       `json:"argv"`
	Env      []string       `json:"env"`
	Cwd      string         `json:"cwd"`
	TTY      bool           `json:"tty"`
	Landlock landlock.Tiers `json:"landlock"`
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
	execArg: execMain,
}
