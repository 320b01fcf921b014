package job

// Stages are the points of one run's lifecycle, declared in the order they
// happen. Each is called at most once per run, and never before the one
// above it has returned. A stage that returns an error stops the run
// there: nothing of the later stages happens, and everything the earlier
// ones made (placeholders, init and its namespaces, listeners, the pty) is
// undone before the run returns. What job and the services do at each
// stage, and where a new service joins, is listed beside each field.
//
// In sandbox.Options terms: InitStarted is OnStart, Wired is
// BeforeCommand, CommandStarted is OnCommand, CommandExited is OnQuiet.
type Stages struct {
	// Planned: the filesystem view is planned and the placeholders are
	// being made (with a tripwire snapshot: made, and the snapshot taken);
	// nothing runs yet. The services check the cgroup's limits here, so a
	// required limit that is not enforced stops the run before init
	// exists; the foreground prints its start line here.
	Planned func() error
	// InitStarted: init exists, with the pid given, in its cgroup (the
	// thread that cloned it was placed there); the placeholders exist and
	// init is building the view. The services place init in the cgroup's
	// other hierarchies first. Init confines itself and starts the command
	// only after Wired has returned.
	InitStarted func(pid int) error
	// Wired: the host side of the sandbox is in place: the listeners init
	// made are served (network mode "proxy"), the command's terminal is
	// attached, the files the user runs soon are snapshotted and the git
	// metadata is recorded. Init may still be building the view; once it
	// has, and this stage has returned, it confines itself and starts the
	// command.
	Wired func() error
	// CommandStarted: the command's execve worked.
	CommandStarted func()
	// CommandExited: the command has exited and init has killed and reaped
	// every other process of the sandbox; nothing inside can act any more.
	// The snapshot restore, the placeholders' removal and the checks of
	// what the command left behind start here. (Not called when init
	// itself was killed: they start at SandboxGone then. With a container
	// engine, called only once init is reaped: the engine's processes,
	// which init cannot signal, are gone only then.)
	CommandExited func()
	// SandboxGone: init has exited; the kernel tears its namespaces down
	// meanwhile. A caller that runs once releases its services here.
	SandboxGone func()
	// Checked: the checks have reported (Hooks.Restored, OnFinding,
	// GitChecked), the listeners are closed and the placeholders removed:
	// the run is over. Called only after SandboxGone.
	Checked func()
}
