package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// inNS runs f on a thread of its own that has joined the network namespace
// nsfd (or a new one, nsfd < 0) and returns f's error. Sockets f creates
// belong to that namespace wherever they are used later. The thread is
// never unlocked, so it ends with f instead of going back to the pool in
// another namespace.
func inNS(nsfd int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var err error
		if nsfd < 0 {
			err = unix.Unshare(unix.CLONE_NEWNET)
		} else {
			err = unix.Setns(nsfd, unix.CLONE_NEWNET)
		}
		if err != nil {
			errc <- fmt.Errorf("entering the network namespace: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// openNS opens a named namespace (ip netns add) or a path.
func openNS(name string) (int, error) {
	path := name
	if name != "" && name[0] != '/' {
		path = "/run/netns/" + name
	}
	return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// thisNS opens the calling thread's network namespace (inside inNS).
func thisNS() (int, error) {
	return unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// Netlink, written out as stockade's internal/capture does: requests that
// ask for no acknowledgement, several in one sendmsg; one non-blocking
// read that finds nothing says they all worked.

func nlSocket(proto int) (int, error) {
	return unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
}

// nlDo sends msg on fd and returns the first error the kernel answered.
func nlDo(fd int, msg []byte) error {
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	var buf [256]byte
	if n, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_DONTWAIT); err == nil && n >= 20 &&
		binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if e := int32(binary.NativeEndian.Uint32(buf[16:])); e != 0 {
			return syscall.Errno(-e)
		}
	}
	return nil
}

type nlmsg struct{ b []byte }

func (m *nlmsg) begin(typ, flags uint16, seq uint32) int {
	start := len(m.b)
	m.b = binary.NativeEndian.AppendUint32(m.b, 0)
	m.b = binary.NativeEndian.AppendUint16(m.b, typ)
	m.b = binary.NativeEndian.AppendUint16(m.b, flags)
	m.b = binary.NativeEndian.AppendUint32(m.b, seq)
	m.b = binary.NativeEndian.AppendUint32(m.b, 0)
	return start
}

func (m *nlmsg) end(start int) {
	binary.NativeEndian.PutUint32(m.b[start:], uint32(len(m.b)-start))
}

func (m *nlmsg) attr(typ uint16, data []byte) {
	m.b = binary.NativeEndian.AppendUint16(m.b, uint16(4+len(data)))
	m.b = binary.NativeEndian.AppendUint16(m.b, typ)
	m.b = append(m.b, data...)
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// linkUp brings interface index up, with mtu when mtu > 0.
func (m *nlmsg) linkUp(index int, mtu uint32) {
	s := m.begin(unix.RTM_NEWLINK, unix.NLM_F_REQUEST, uint32(len(m.b)+1))
	// struct ifinfomsg: family, pad, type, index, flags, change
	m.b = append(m.b, unix.AF_UNSPEC, 0, 0, 0)
	m.b = binary.NativeEndian.AppendUint32(m.b, uint32(index))
	m.b = binary.NativeEndian.AppendUint32(m.b, unix.IFF_UP)
	m.b = binary.NativeEndian.AppendUint32(m.b, unix.IFF_UP)
	if mtu > 0 {
		m.attr(unix.IFLA_MTU, u32(mtu))
	}
	m.end(s)
}

// addr adds a host address (no duplicate address detection for IPv6).
func (m *nlmsg) addr(index int, a netip.Addr) {
	s := m.begin(unix.RTM_NEWADDR, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL, uint32(len(m.b)+1))
	fam := byte(unix.AF_INET)
	if a.Is6() {
		fam = unix.AF_INET6
	}
	// struct ifaddrmsg: family, prefixlen, flags, scope, index
	m.b = append(m.b, fam, byte(a.BitLen()), 0, unix.RT_SCOPE_UNIVERSE)
	m.b = binary.NativeEndian.AppendUint32(m.b, uint32(index))
	m.attr(unix.IFA_LOCAL, a.AsSlice())
	m.attr(unix.IFA_ADDRESS, a.AsSlice())
	if a.Is6() {
		m.attr(unix.IFA_FLAGS, u32(unix.IFA_F_NODAD))
	}
	m.end(s)
}

// defaultRoute adds "default dev index" for the family of a.
func (m *nlmsg) defaultRoute(index int, v6 bool) {
	s := m.begin(unix.RTM_NEWROUTE, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL, uint32(len(m.b)+1))
	fam, scope := byte(unix.AF_INET), byte(unix.RT_SCOPE_LINK)
	if v6 {
		fam, scope = unix.AF_INET6, unix.RT_SCOPE_UNIVERSE
	}
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type; flags
	m.b = append(m.b, fam, 0, 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_STATIC, scope, unix.RTN_UNICAST)
	m.b = binary.NativeEndian.AppendUint32(m.b, 0)
	m.attr(unix.RTA_OIF, u32(uint32(index)))
	m.end(s)
}

// ifIndex returns the index of the interface name in the namespace of the
// socket fd.
func ifIndex(fd int, name string) (int, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, os.NewSyscallError("SIOCGIFINDEX", err)
	}
	return int(ifr.Uint32()), nil
}

// loUp brings lo up in the calling thread's namespace.
func loUp() error {
	fd, err := nlSocket(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var m nlmsg
	m.linkUp(1, 0)
	return nlDo(fd, m.b)
}
