//go:build linux

package netns

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// LoopbackUp brings up "lo" in the caller's network namespace. It needs
// CAP_NET_ADMIN in the user namespace that owns the network namespace.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening a socket to configure lo: %w", os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("naming lo: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo flags: %w", os.NewSyscallError("ioctl SIOCGIFFLAGS", err))
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", os.NewSyscallError("ioctl SIOCSIFFLAGS", err))
	}
	return nil
}
