package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// startInit clones init into new namespaces. In the supervisor it returns
// init's pid; init never returns from it, and runs on a copy of the
// goroutine's stack (on amd64 it has a stack of its own in the arena, and
// drops the rest of the supervisor's memory: see init_linux_amd64.go).
//
//go:norace
//go:nocheckptr
func startInit(p *program, _ *arena, flags uintptr) (int, syscall.Errno) {
	runtimeBeforeFork()
	pid, _, errno := syscall.RawSyscall6(unix.SYS_CLONE, flags|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 || pid != 0 {
		runtimeAfterFork()
		return int(pid), errno
	}
	p.initMain()
	return 0, 0
}
