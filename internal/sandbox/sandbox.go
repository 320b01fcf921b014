// Package sandbox is the native backend: it starts a command in new user,
// mount, PID, network, IPC, UTS and cgroup namespaces and confines it.
//
// One Go process takes part, the supervisor; init is a fork of it that only
// makes raw system calls (child_linux.go), and the command is vforked by
// init:
//
//	supervisor (outside)            init (PID 1 inside)                 command
//	   │ program (plain memory)       │
//	   │ clone(CLONE_NEW*) ─────────▶ │ hostname, lo up
//	   │ ◀── listeners (fd 3) ─────── │ (proxy mode: sockets on 127.0.0.1)
//	   │                              │ uid/gid maps, user counters
//	   │ placeholders made            │
//	   │ "ready" (fd 3) ────────────▶ │ build the root, pivot_root
//	   │ cgroup: add init's pid       │
//	   │ ◀── feed file (fd 3) ─────── │ (proxy mode: the denials file, write-only)
//	   │ ◀── pty master (fd 3) ────── │ (with a terminal: /dev/ptmx inside)
//	   │ "placed" (fd 3) ───────────▶ │ unshare(CLONE_NEWCGROUP)
//	   │                              │ no_new_privs, Landlock, drop caps,
//	   │                              │ seccomp
//	   │                              │ vfork+exec (fds 0-2 only) ─────────▶ │
//	   │ ◀─ "started" (fd 3) ──────── │
//	   │ ◀─ failure report (fd 3) ─── │ (only if a step failed)
//	   │                              │ reap, forward signals
//	   │ ◀─ "quiet" (fd 3) ────────── │ command gone: kill and reap the rest
//	   │ ◀────────── exit status ──── │ the command's
//
// Init confines itself before it starts the command, which inherits every
// restriction; PID 1 is thus never more powerful than what it supervises.
// A failure before the command's execve travels back as a report naming the
// step, which the supervisor turns into a StepError with the path and the
// errno, and init exits with the status the report carries (ExitSetup;
// ExitNotExec or ExitNotFound when the command's execve failed). If the supervisor dies, init gets
// SIGKILL (PR_SET_PDEATHSIG) and also sees the socket close; as PID 1 its
// death takes the whole PID namespace with it.
package sandbox

import (
	"fmt"
	"os"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Exit statuses of a sandbox that did not run its command to the end.
const (
	ExitSetup      = 125    // the sandbox could not be set up
	ExitNotExec    = 126    // the command exists but could not be executed
	ExitNotFound   = 127    // the command was not found
	ExitSignalBase = 128    // 128+N: the command was killed by signal N
	stagingBase    = "/tmp" // where init stages the new root (under a tmpfs)
	msgMapped      = 'U'    // supervisor → init: your id maps are written (Spec.Engine)
	msgReady       = 'M'    // supervisor → init: the placeholders exist, mount
	msgBuilt       = 'V'    // init → supervisor: the view is built (Spec.Engine)
	msgPlaced      = 'P'    // supervisor → init: you are in your cgroup
	msgQuiet       = 'Q'    // init → supervisor: every process but init is gone; then the exit status (a byte)
	msgStarted     = 'S'    // init → supervisor: the command is running
	msgPTY         = 'T'    // init → supervisor: the master of the command's pty (SCM_RIGHTS)
	msgListeners   = 'L'    // init → supervisor: the Listeners, in order (SCM_RIGHTS)
	msgFeed        = 'F'    // init → supervisor: the plan's Feed file, write-only (SCM_RIGHTS)
	msgStore       = 'K'    // init → supervisor: the plan's Store, a detached mount (SCM_RIGHTS)
)

// Spec is everything init needs to build the sandbox and start the command.
type Spec struct {
	ID       string     `json:"id"`
	Hostname string     `json:"hostname"`
	Plan     mount.Plan `json:"plan"`
	Exec     ExecSpec   `json:"exec"`
	// Listen asks init for the proxy listeners (see Listeners).
	Listen bool `json:"listen,omitempty"`
	// Slurm adds the Slurm chaperon's listener to them (package slurm).
	Slurm bool `json:"slurm,omitempty"`
	// Engine says the sandbox holds a container engine (package engine).
	// Init then waits, unmapped and still dumpable, for Options.MapIDs to
	// write its id maps instead of mapping only the user's own ids itself
	// (a map of several ranges, the subordinate ids the engine needs,
	// takes newuidmap, or root, outside), and its namespace counters allow
	// the engine's and its containers' namespaces.
	Engine bool `json:"engine,omitempty"`
}

// Listeners are the sockets init creates inside the sandbox's network
// namespace, on its only interface, and hands to the supervisor, which
// serves them from the host's network namespace: no proxy process runs
// inside, and nothing needs a bridge or root.
var Listeners = []struct {
	Name, Network, Addr string
}{
	{"http", "tcp", sandboxnet.HTTPProxyAddr},
	{"socks5", "tcp", sandboxnet.SOCKS5Addr},
	{"dns", "tcp", sandboxnet.DNSAddr},
	{"dns", "udp", sandboxnet.DNSAddr},
	{"auth", "tcp", sandboxnet.AuthAddr},
	// Where the capture rules send the sandbox's TCP to other addresses
	// (package capture): one dual-stack socket for both families, or
	// sandboxnet.CaptureAddr where the kernel has no IPv6.
	{"capture", "tcp", sandboxnet.CaptureBind},
	// Last, so that a sandbox without it takes the others by index.
	{"slurm", "tcp", sandboxnet.SlurmAddr},
}

// listenerCount is how many of the Listeners init makes for spec: the
// Slurm chaperon's only when the spec asks for it.
func listenerCount(spec Spec) int {
	switch {
	case !spec.Listen:
		return 0
	case spec.Slurm:
		return len(Listeners)
	}
	return len(Listeners) - 1
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

// Entrypoints are the roles in which stockade re-executes its own binary,
// keyed by argv[1]: the detached supervisor of a session (package session)
// and the namespace check of ProbeNamespaces. cli.Run dispatches to them
// before parsing any flag. Init is not one: it is a fork that never runs
// main (child_linux.go).
var Entrypoints = map[string]func() int{}

// InitPlacer has init place itself in a cgroup (cgroup.Group.TaskFiles):
// TaskFiles are descriptors of cgroup v1 tasks files, to each of which
// init writes "0" as its first act; InitPlaced hears whether init was
// given them (it dies, and the start fails, if a write fails).
type InitPlacer interface {
	TaskFiles() []int
	InitPlaced(given bool)
}

// Options are the host-side settings of one sandbox run. The hooks are
// declared in the order they run, each at most once; one that returns an
// error stops the sandbox before the command starts.
type Options struct {
	Stdin, Stdout, Stderr *os.File
	// Placer, when set, has init move itself into the sandbox's cgroup
	// before it does anything else (cgroup.Group). OnStart then places
	// init in what is left.
	Placer InitPlacer
	// MapIDs writes init's uid and gid maps when the spec asks
	// (Spec.Engine); it runs first, while init waits with its
	// user namespace unmapped and /proc/PID still open to its owner.
	MapIDs func(pid int) error
	// BeforeMounts runs once init exists; init makes no step of a mount
	// marked Held (one over a placeholder) before it returns, so the
	// placeholders the plan binds may be made meanwhile; the other mounts
	// it makes meanwhile. An error stops the sandbox.
	BeforeMounts func() error
	// OnStart runs while init builds the filesystem view; the cgroup
	// placement happens here. Init starts nothing of the command's before
	// it returns.
	OnStart func(pid int) error
	// OnListeners receives the Listeners init made (when the spec asks),
	// in their order, before the command starts.
	OnListeners func(files []*os.File) error
	// OnFeed receives a write-only descriptor of the plan's Feed file
	// (mount.Feed), which the sandbox sees read-only and which exists
	// nowhere else: the callee owns it (nil: it is closed). It runs
	// before OnPTY, after init built the view.
	OnFeed func(f *os.File) error
	// OnStore receives the detached mount of the plan's Store
	// (mount.Plan.Store), which the sandbox's view does not hold: the
	// callee owns it (nil: it is closed). It runs after OnFeed.
	OnStore func(f *os.File) error
	// OnCaptureOff hears why the sandbox's transparent capture could not
	// be set up (package capture): the kernel refused the nftables rules
	// or the route. The sandbox runs without them, as one without capture
	// would: connections that ignore the proxies fail.
	OnCaptureOff func(err error)
	// OnPTY receives the master of the command's pseudo-terminal, which
	// init opens inside when the spec asks for a terminal. The command
	// starts after OnPTY returns, so the terminal's size can be set first.
	OnPTY func(master *os.File) error
	// BeforeCommand runs before init may start the command; an error stops
	// the sandbox.
	BeforeCommand func() error
	// OnCommand runs when init has started the command (its execve worked).
	// It and OnQuiet run inside Wait, on its goroutine, which reads init's
	// messages: a caller that waits for either must be in Wait.
	OnCommand func()
	// OnQuiet runs when the command has exited and init has killed and
	// reaped every other process of the sandbox, just before init exits:
	// from then on nothing inside can act, and host-side cleanup may start
	// while the kernel tears the namespaces down.
	OnQuiet func()
}
