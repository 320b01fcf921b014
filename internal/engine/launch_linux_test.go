package engine

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseOnExec: a descriptor the launcher inherited without
// close-on-exec (as nsenter passes the sandbox's namespaces and the
// binary) is marked so, and does not reach the engine it execs.
func TestCloseOnExec(t *testing.T) {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("the test descriptor is close-on-exec already")
	}
	if err := closeOnExec(); err != nil {
		t.Fatal(err)
	}
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d is not close-on-exec", fd)
	}
	for _, std := range []int{0, 1, 2} {
		if flags, _ := unix.FcntlInt(uintptr(std), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
			t.Errorf("standard descriptor %d made close-on-exec", std)
		}
	}
}
