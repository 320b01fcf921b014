//go:build linux

package caps

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DropThread empties every capability set of the calling thread
// (capabilities are per thread), for a caller about to execve on a locked
// OS thread. With CAP_SETPCAP it first locks SecureBits and empties the
// bounding set; without it neither can be changed, and neither matters
// once no_new_privs is set: execve then grants no capability the permitted
// set did not hold, and that set is emptied here. The ambient set is
// cleared where the kernel has one.
func DropThread() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", os.NewSyscallError("capget", err))
	}
	if data[unix.CAP_SETPCAP/32].Effective&(1<<(unix.CAP_SETPCAP%32)) != 0 {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, SecureBits, 0, 0, 0); err != nil {
			return fmt.Errorf("locking the secure bits: %w", os.NewSyscallError("prctl", err))
		}
		for c := 0; c <= LastCap(); c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, os.NewSyscallError("prctl", err))
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing the ambient capabilities: %w", os.NewSyscallError("prctl", err))
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("emptying the capability sets: %w", os.NewSyscallError("capset", err))
	}
	return nil
}
