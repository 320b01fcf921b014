package egress

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// soOriginalDst is SO_ORIGINAL_DST (linux/netfilter_ipv4.h) and, at level
// SOL_IPV6, IP6T_SO_ORIGINAL_DST: the destination a connection had before
// a nat rule redirected it.
const soOriginalDst = 80

// originalDst returns where a connection the capture rules redirected was
// going. The socket belongs to the sandbox's network namespace, and so does
// the connection tracking entry the kernel reads it from.
func originalDst(c net.Conn) (netip.AddrPort, error) {
	tc := tcpConn(c)
	if tc == nil {
		return netip.AddrPort{}, errors.New("original destination: not a TCP connection")
	}
	local, _ := netip.ParseAddrPort(tc.LocalAddr().String())
	rc, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var ap netip.AddrPort
	var serr error
	err = rc.Control(func(fd uintptr) {
		if local.Addr().Unmap().Is4() {
			var sa unix.RawSockaddrInet4
			if serr = getsockopt(fd, unix.SOL_IP, unsafe.Pointer(&sa), unsafe.Sizeof(sa)); serr == nil {
				ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), ntohs(sa.Port))
			}
			return
		}
		var sa unix.RawSockaddrInet6
		if serr = getsockopt(fd, unix.SOL_IPV6, unsafe.Pointer(&sa), unsafe.Sizeof(sa)); serr == nil {
			ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), ntohs(sa.Port))
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, os.NewSyscallError("getsockopt SO_ORIGINAL_DST", err)
	}
	return ap, nil
}

func getsockopt(fd uintptr, level int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), soOriginalDst, uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// ntohs reads a port kept in network order.
func ntohs(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}
