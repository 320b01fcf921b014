package seccomp

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads prog as a seccomp filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC). A filter cannot be removed: it stays on the
// process and everything it executes or forks.
//
// The kernel accepts a filter only from a process with no_new_privs set or
// CAP_SYS_ADMIN, so the caller runs prctl(PR_SET_NO_NEW_PRIVS, 1) first;
// otherwise Install fails with EACCES. stockade installs the filter last,
// on the locked OS thread that then calls execve, so that no setup step of
// its own runs under it.
func Install(prog []Instruction) error {
	if len(prog) == 0 || len(prog) > maxInstructions {
		return fmt.Errorf("installing seccomp filter: %d instructions, want 1 to %d", len(prog), maxInstructions)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno == unix.EACCES:
		return fmt.Errorf("installing seccomp filter (set PR_SET_NO_NEW_PRIVS first): %w",
			os.NewSyscallError("seccomp", errno))
	case errno != 0:
		return fmt.Errorf("installing seccomp filter: %w", os.NewSyscallError("seccomp", errno))
	case r != 0:
		// With TSYNC, a positive result is the ID of a thread that could not
		// take the filter (it has an unrelated filter of its own).
		return fmt.Errorf("installing seccomp filter: thread %d could not be synchronized", r)
	}
	return nil
}
