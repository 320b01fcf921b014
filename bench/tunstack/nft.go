package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"github.com/stockade-dev/stockade/internal/capture"
	"golang.org/x/sys/unix"
)

// nftPort is the capture listener's port in the client's namespace (not
// stockade's: this is a benchmark).
const nftPort = 7129

// setupNFT makes, in the namespace nsfd (lo already up), what stockade's
// init and supervisor make there (nftInside).
func setupNFT(nsfd int, port uint16) (net.Listener, error) {
	var ln net.Listener
	err := inNS(nsfd, func() error {
		var err error
		ln, err = nftInside(port)
		return err
	})
	return ln, err
}

// nftInside runs on a thread in the client's namespace: the dual-stack
// capture listener, then the nftables batch and the local routes of
// package capture (the same bytes as stockade's), each in one sendmsg on a
// netlink socket of the namespace.
func nftInside(port uint16) (net.Listener, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("[::]:%d", port))
	if err != nil {
		return nil, err
	}
	err = func() error {
		m := capture.Build(port, true)
		nf, err := nlSocket(unix.NETLINK_NETFILTER)
		if err != nil {
			return err
		}
		defer unix.Close(nf)
		rt, err := nlSocket(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer unix.Close(rt)
		if err := nlDo(nf, m.Rules); err != nil {
			return fmt.Errorf("nftables rules: %w", err)
		}
		if err := nlDo(rt, m.Route); err != nil {
			return fmt.Errorf("routes through lo: %w", err)
		}
		return nil
	}()
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func serveNFT(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			dst, err := originalDst(c.(*net.TCPConn))
			if err != nil {
				c.Close()
				return
			}
			up, err := dialOut(dst)
			if err != nil {
				c.Close()
				return
			}
			pipe(c, up, spliceCopy)
		}()
	}
}

// originalDst reads SO_ORIGINAL_DST (IPv4) or IP6T_SO_ORIGINAL_DST (IPv6),
// as internal/egress does.
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	local, _ := netip.ParseAddrPort(c.LocalAddr().String())
	rc, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	const soOriginalDst = 80
	var ap netip.AddrPort
	var serr error
	err = rc.Control(func(fd uintptr) {
		if local.Addr().Unmap().Is4() {
			var sa unix.RawSockaddrInet4
			l := uint32(unsafe.Sizeof(sa))
			if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_IP, soOriginalDst, uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
				serr = e
				return
			}
			p := (*[2]byte)(unsafe.Pointer(&sa.Port))
			ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
			return
		}
		var sa unix.RawSockaddrInet6
		l := uint32(unsafe.Sizeof(sa))
		if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_IPV6, soOriginalDst, uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
			serr = e
			return
		}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, os.NewSyscallError("getsockopt SO_ORIGINAL_DST", err)
	}
	return ap, nil
}

var errNoNetstack = errors.New("built without the netstack (tag nonetstack)")
