package e2e

import (
	"testing"

	"golang.org/x/sys/unix"
)

// waitExit waits until process pid has exited, on a pidfd.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 30_000)
		if err != unix.EINTR {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}
