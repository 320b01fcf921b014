//go:build !nonetstack

package main

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/link/tun"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// The client's addresses on the TUN device: it needs a source address of
// a scope other than host to connect anywhere through it.
var (
	tunAddr4 = netip.MustParseAddr("198.51.100.200")
	tunAddr6 = netip.MustParseAddr("2001:db8:5100:1::200")
)

const tunName = "tsb-tun0"

// tunSACK turns SACK (and with it RACK loss detection) on in the stack.
var tunSACK = false

// setupTUN makes, in the namespace nsfd, the TUN device (tunInside) and
// serves it from this process's namespace (tunServe).
func setupTUN(nsfd int, mtu uint32) (*tunRelay, error) {
	var fd int
	err := inNS(nsfd, func() error {
		var err error
		fd, err = tunInside(mtu)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tunServe(fd, mtu)
}

// tunInside runs on a thread in the client's namespace: a TUN device, its
// link up, the client's addresses on it and the default routes of both
// families through it (one sendmsg on a netlink socket of the namespace).
// It returns the device's descriptor.
func tunInside(mtu uint32) (int, error) {
	fd, err := tun.Open(tunName)
	if err != nil {
		return -1, fmt.Errorf("opening the TUN device: %w", err)
	}
	err = func() error {
		rt, err := nlSocket(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer unix.Close(rt)
		idx, err := ifIndex(rt, tunName)
		if err != nil {
			return err
		}
		var m nlmsg
		m.linkUp(idx, mtu)
		m.addr(idx, tunAddr4)
		m.addr(idx, tunAddr6)
		m.defaultRoute(idx, false)
		m.defaultRoute(idx, true)
		return nlDo(rt, m.b)
	}()
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// tunServe serves the TUN descriptor fd with a gVisor stack whose TCP
// forwarder takes every connection to any address and relays it, dialing
// from this process's namespace.
func tunServe(fd int, mtu uint32) (*tunRelay, error) {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
	})
	ep, err := fdbased.New(&fdbased.Options{
		FDs: []int{fd},
		MTU: mtu,
		// The packets come from this machine's kernel, which computed
		// their checksums: skip checking them again.
		RXChecksumOffload: true,
	})
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	const nic = 1
	if e := s.CreateNIC(nic, ep); e != nil {
		return nil, fmt.Errorf("CreateNIC: %v", e)
	}
	// Take packets to any address, answer from any address.
	s.SetPromiscuousMode(nic, true)
	s.SetSpoofing(nic, true)
	s.SetRouteTable([]tcpip.Route{
		{Destination: header.IPv4EmptySubnet, NIC: nic},
		{Destination: header.IPv6EmptySubnet, NIC: nic},
	})
	sack := tcpip.TCPSACKEnabled(tunSACK)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	mod := tcpip.TCPModerateReceiveBufferOption(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &mod)

	fwd := tcp.NewForwarder(s, 0, 1024, func(r *tcp.ForwarderRequest) {
		id := r.ID()
		var wq waiter.Queue
		ep, e := r.CreateEndpoint(&wq)
		if e != nil {
			r.Complete(true)
			return
		}
		r.Complete(false)
		c := gonet.NewTCPConn(&wq, ep)
		// The connection's local end is where the client was going.
		dst, _ := netip.AddrFromSlice(id.LocalAddress.AsSlice())
		go func() {
			up, err := dialOut(netip.AddrPortFrom(dst, id.LocalPort))
			if err != nil {
				c.Close()
				return
			}
			pipe(c, up, bufCopy)
		}()
	})
	s.SetTransportProtocolHandler(tcp.ProtocolNumber, fwd.HandlePacket)
	return &tunRelay{s: s, fd: fd}, nil
}

type tunRelay struct {
	s  *stack.Stack
	fd int
}

// Close ends the stack, then the device (closing its descriptor removes it).
func (t *tunRelay) Close() {
	t.s.Close()
	t.s.Wait()
	unix.Close(t.fd)
}
