//go:build linux

package netns

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// Listen creates a listening TCP socket or a bound UDP socket on addr (an
// IPv4 ip:port) in the caller's network namespace and returns its
// descriptor (close-on-exec). Init uses it to make the proxy listeners
// inside the sandbox, which it then hands to the supervisor.
func Listen(network, addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return -1, fmt.Errorf("listen address %q is not an IPv4 ip:port", addr)
	}
	typ := unix.SOCK_STREAM
	if network == "udp" {
		typ = unix.SOCK_DGRAM
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("bind", err)
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 512); err != nil {
			unix.Close(fd)
			return -1, os.NewSyscallError("listen", err)
		}
	}
	return fd, nil
}
