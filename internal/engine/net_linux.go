package engine

import (
	endian "encoding/binary" // the byte order of netlink messages
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// podListen puts sandboxnet.PodHost on the sandbox's lo and makes the
// listeners of engineListeners, in its order. The launcher runs it as the
// sandbox's uid 0, which holds CAP_NET_ADMIN and CAP_NET_BIND_SERVICE over
// the sandbox's network namespace (its user namespace owns it), before the
// command starts.
func podListen() ([]*os.File, error) {
	if err := addLoopbackAddr(netip.MustParseAddr(sandboxnet.PodHost)); err != nil {
		return nil, fmt.Errorf("putting %s on lo for the pods' proxies: %w", sandboxnet.PodHost, err)
	}
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for _, l := range engineListeners {
		var f *os.File
		var err error
		if l.network == "udp" {
			var pc net.PacketConn
			if pc, err = net.ListenPacket("udp4", l.addr); err == nil {
				f, err = pc.(*net.UDPConn).File()
				pc.Close()
			}
		} else {
			var ln net.Listener
			if ln, err = net.Listen("tcp4", l.addr); err == nil {
				f, err = ln.(*net.TCPListener).File()
				ln.Close()
			}
		}
		if err != nil {
			return fail(fmt.Errorf("listening on %s %s: %w", l.network, l.addr, err))
		}
		files = append(files, f)
	}
	return files, nil
}

// addLoopbackAddr adds a (as a /32) to lo, by netlink (RTM_NEWADDR).
func addLoopbackAddr(a netip.Addr) error {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ip := a.As4()
	attr := func(typ uint16, v []byte) []byte {
		b := make([]byte, unix.SizeofRtAttr, unix.SizeofRtAttr+len(v))
		endian.NativeEndian.PutUint16(b[0:], uint16(unix.SizeofRtAttr+len(v)))
		endian.NativeEndian.PutUint16(b[2:], typ)
		return append(b, v...)
	}
	body := []byte{unix.AF_INET, 32, 0, unix.RT_SCOPE_HOST, 0, 0, 0, 0}
	endian.NativeEndian.PutUint32(body[4:], uint32(lo.Index))
	body = append(body, attr(unix.IFA_LOCAL, ip[:])...)
	body = append(body, attr(unix.IFA_ADDRESS, ip[:])...)
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	endian.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	endian.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWADDR)
	endian.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	endian.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return os.NewSyscallError("sendto", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return os.NewSyscallError("recvfrom", err)
	}
	// The answer to a request with NLM_F_ACK is an NLMSG_ERROR whose
	// error is 0 on success.
	if n < unix.SizeofNlMsghdr+4 || endian.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("no acknowledgement from netlink")
	}
	if errno := int32(endian.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); errno != 0 {
		return os.NewSyscallError("RTM_NEWADDR", unix.Errno(-errno))
	}
	return nil
}

// sendReady says "ready" to the supervisor with the listeners' descriptors.
func sendReady(ready *os.File, files []*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	if err := unix.Sendmsg(int(ready.Fd()), []byte("ready"), unix.UnixRights(fds...), nil, 0); err != nil {
		return os.NewSyscallError("sendmsg", err)
	}
	return nil
}
