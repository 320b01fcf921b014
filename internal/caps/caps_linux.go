//go:build linux

package caps

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SecureBits makes "root" mean nothing special to execve and locks that in:
// even uid 0 inside the sandbox gains no capability by executing a binary.
const SecureBits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS itself off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// LastCap returns the highest capability number the kernel knows.
func LastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return unix.CAP_LAST_CAP
}

// DropAll removes every capability: the bounding set, secure bits and ambient
// set of the calling thread (the one that will fork or execve), and the
// effective, permitted and inheritable sets of every thread. It needs CAP_SETPCAP for the bounding set and secure bits;
// without it (an unprivileged caller that was never given it) those steps are
// skipped, because such a caller cannot hold capabilities worth dropping there.
func DropAll() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", os.NewSyscallError("capget", err))
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, SecureBits, 0, 0, 0); err != nil {
			return fmt.Errorf("locking secure bits: %w", os.NewSyscallError("prctl", err))
		}
		last := LastCap()
		for c := 0; c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, os.NewSyscallError("prctl", err))
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", os.NewSyscallError("prctl", err))
	}
	// The capability sets are cleared on every thread of the process, so no
	// thread the Go runtime might later fork from keeps any.
	data = [2]unix.CapUserData{}
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if e != 0 {
		return fmt.Errorf("clearing capabilities: %w", os.NewSyscallError("capset", e))
	}
	return nil
}
