//go:build linux

package landlock

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

const (
	read      = llsys.AccessFSReadFile | llsys.AccessFSReadDir
	write     = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	execute   = llsys.AccessFSExecute
	refer     = llsys.AccessFSRefer
	ioctlDev  = llsys.AccessFSIoctlDev
	handledFS = (1 << 16) - 1 // every filesystem right up to ABI 7
	scoped    = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
)

// ABI returns the Landlock ABI version of the running kernel (0 if none).
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Restrict enforces the tiers on every thread of the calling process. The
// caller must have set no_new_privs. It refuses to run below MinABI instead of
// degrading to nothing.
func Restrict(t Tiers) error {
	if err := CheckABI(ABI()); err != nil {
		return err
	}
	cfg, err := ll.NewConfig(ll.AccessFSSet(handledFS), ll.ScopedSet(scoped))
	if err != nil {
		return fmt.Errorf("building landlock config: %w", err)
	}
	rules := []ll.Rule{
		ll.PathAccess(read|execute|refer, t.ReadExec...),
		ll.PathAccess(read|refer, t.ReadOnly...),
		ll.PathAccess(read|write|refer|ioctlDev, t.WriteNoExec...),
		ll.PathAccess(read|write|execute|refer|ioctlDev, t.WriteExec...),
	}
	if err := cfg.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("enforcing landlock ruleset: %w", err)
	}
	return nil
}

// RestrictAll denies every filesystem access to the calling process. Init uses
// it on itself once the agent is running: it has no reason to touch a file
// again. Signals are not scoped: init must still forward them to the
// command, whose Landlock domain is not nested in init's.
func RestrictAll() error {
	cfg, err := ll.NewConfig(ll.AccessFSSet(handledFS), ll.ScopedSet(llsys.ScopeAbstractUnixSocket))
	if err != nil {
		return fmt.Errorf("building landlock config: %w", err)
	}
	if err := cfg.BestEffort().Restrict(); err != nil {
		return fmt.Errorf("enforcing empty landlock ruleset: %w", err)
	}
	return nil
}
