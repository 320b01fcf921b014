//go:build linux

package sandbox

// The linknames and assembly declarations of the package, all of them:
// the glue between init (child_linux.go, which states the contract) and
// what Go does not offer.

import (
	"syscall"
	_ "unsafe" // for go:linkname
)

// runtimeBeforeFork and runtimeAfterFork bracket the clone of init, as
// syscall.forkExec brackets its fork: signals blocked, and the runtime
// told not to preempt or collect meanwhile. Called in the supervisor only.
//
//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

// vfork is in vfork_linux_*.s: clone(CLONE_VM|CLONE_VFORK|SIGCHLD), which
// init's program.spawn calls.
func vfork() (pid uintptr, errno syscall.Errno)
