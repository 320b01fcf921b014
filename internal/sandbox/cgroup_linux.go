package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// digitZero is what a thread writes to a cgroup v1 tasks file to move
// itself.
var digitZero = [1]byte{'0'}

// moveThread writes "0" to each tasks file of fds with raw system calls,
// moving the calling thread, between runtimeBeforeFork and
// runtimeAfterFork: nothing else runs on this thread meanwhile, and the Go
// runtime starts no thread from it (a thread it started would be born in
// the sandbox's cgroup). Like all code there, it must not grow the stack. When one write fails, the thread goes back through
// undo (the first writes' counterparts) and moveThread reports false.
//
//go:norace
//go:nosplit
func moveThread(fds, undo []int) bool {
	if len(fds) == 0 {
		return false
	}
	for i, fd := range fds {
		if _, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&digitZero[0])), 1); e != 0 {
			for j := 0; j < i && j < len(undo); j++ {
				syscall.RawSyscall(unix.SYS_WRITE, uintptr(undo[j]), uintptr(unsafe.Pointer(&digitZero[0])), 1)
			}
			return false
		}
	}
	return true
}
