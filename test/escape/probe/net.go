//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// socketNames lets rows say AF_PACKET instead of 17.
var socketNames = map[string]int{
	"AF_UNIX": unix.AF_UNIX, "AF_INET": unix.AF_INET, "AF_INET6": unix.AF_INET6,
	"AF_NETLINK": unix.AF_NETLINK, "AF_PACKET": unix.AF_PACKET, "AF_VSOCK": unix.AF_VSOCK,
	"AF_ALG": unix.AF_ALG, "AF_KEY": unix.AF_KEY, "AF_XDP": unix.AF_XDP, "AF_TIPC": unix.AF_TIPC,
	"AF_BLUETOOTH": unix.AF_BLUETOOTH, "AF_RDS": unix.AF_RDS, "AF_CAN": unix.AF_CAN,
	"AF_NFC": unix.AF_NFC, "AF_SMC": unix.AF_SMC,
	"SOCK_STREAM": unix.SOCK_STREAM, "SOCK_DGRAM": unix.SOCK_DGRAM, "SOCK_RAW": unix.SOCK_RAW,
	"SOCK_PACKET": unix.SOCK_PACKET, "SOCK_SEQPACKET": unix.SOCK_SEQPACKET, "SOCK_RDM": unix.SOCK_RDM,
	"IPPROTO_IP": unix.IPPROTO_IP, "IPPROTO_TCP": unix.IPPROTO_TCP, "IPPROTO_UDP": unix.IPPROTO_UDP,
	"IPPROTO_MPTCP": unix.IPPROTO_MPTCP, "IPPROTO_ICMP": unix.IPPROTO_ICMP, "IPPROTO_RAW": unix.IPPROTO_RAW,
	"ETH_P_ALL":     0x0300, // htons(ETH_P_ALL)
	"NETLINK_ROUTE": unix.NETLINK_ROUTE, "NETLINK_AUDIT": unix.NETLINK_AUDIT,
}

// Network: the sockets that would go around the egress proxy, connections out of
// the sandbox's network namespace, and the host's unix sockets.
func init() {
	register("socket", 3, func(a []string) error { return socket(a, 0) })
	register("socket-hibits", 3, func(a []string) error { return socket(a, 1<<32) })
	register("connect-tcp", 1, func(a []string) error { return dial("tcp", a[0]) })
	register("connect-udp", 1, func(a []string) error { return dial("udp", a[0]) })
	register("exchange-tcp", 1, func(a []string) error { return exchange("tcp", a[0]) })
	register("exchange-udp", 1, func(a []string) error { return exchange("udp", a[0]) })
	register("connect-unix", 1, func(a []string) error { return dial("unix", a[0]) })
	register("connect-abstract", 1, func(a []string) error { return dial("unix", "@"+a[0]) })
	register("listen-connect-tcp", 0, func([]string) error { return listenConnect("tcp", "127.0.0.1:0") })
	register("listen-connect-abstract", 0, func([]string) error {
		return listenConnect("unix", fmt.Sprintf("@stockade-probe-%d", unix.Getpid()))
	})
	// With --containers the view has /dev/net/tun (for the engine's
	// slirp4netns): opening it makes nothing; making an interface with it
	// needs CAP_NET_ADMIN over the network namespace.
	register("tun", 0, func([]string) error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("stk0")
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		return unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	})
	register("ifaces", 0, func([]string) error {
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return found(strings.Join(names, ","))
	})
}

func socket(a []string, hi uintptr) error {
	var v [3]uintptr
	for i, s := range a {
		n, ok := socketNames[s]
		if !ok {
			p, err := strconv.ParseInt(s, 0, 32)
			if err != nil {
				return fmt.Errorf("socket: unknown name %q", s)
			}
			n = int(p)
		}
		v[i] = uintptr(n)
	}
	// The kernel reads family as an int: bits above 31 must not fool the filter.
	return rawFD(unix.Syscall(unix.SYS_SOCKET, v[0]|hi, v[1]|unix.SOCK_CLOEXEC, v[2]))
}

func dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if network == "udp" { // connect(2) on UDP only checks the route; send too
		_, err = c.Write([]byte("stockade-escape"))
	}
	return err
}

// exchange connects, sends a line and waits for the peer's first byte. A
// TCP connection to an address outside is accepted by the capture
// listener before the supervisor decides, and connect(2) on UDP only
// checks the route: a refusal shows only on the exchange (a reset, an ICMP
// port unreachable). A peer that answers, or stays silent, is a
// connection made.
func exchange(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte("stockade-escape\n")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil && !os.IsTimeout(err) {
		if err == io.EOF {
			return denial("EOF")
		}
		return err
	}
	return nil
}

// listenConnect serves one line on addr and reads it back through a client: the
// loopback a test suite inside the sandbox needs.
func listenConnect(network, addr string) error {
	l, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			fmt.Fprintln(c, "hello")
			c.Close()
		}
	}()
	c, err := net.DialTimeout(network, l.Addr().String(), 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "hello\n" {
		return fmt.Errorf("loopback echo: got %q", line)
	}
	return nil
}
