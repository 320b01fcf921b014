package escape

import (
	"errors"
	"net"
	"os"
	"path/filepath"
)

// netRows: the network namespace holds only lo (docs/architecture.md, "Network path");
// every TCP connection to another address is captured and decided by the agent policy
// (deny by default: the supervisor resets it, ECONNRESET, and never dials), UDP to
// another address is refused (ECONNREFUSED), and the capture rules cannot be removed
// or routed around (no CAP_NET_ADMIN); the host's loopback, abstract
// unix sockets and SSH agent are in other namespaces or outside the view; and seccomp
// refuses the socket types that would go around the egress proxy. Only documentation
// and link-local addresses are used: even a broken sandbox sends nothing to a real
// host.
var netRows = []row{
	{name: "interfaces", args: probe("ifaces"), want: "OK lo"},
	// Before capture these were connect-tcp and connect-udp, ENETUNREACH:
	// now connect(2) works (the capture listener accepts; UDP has a route
	// through lo), and the refusal comes on the exchange.
	{name: "connect_public_tcp", args: probe("exchange-tcp", "203.0.113.1:443"), want: "DENIED ECONNRESET"},
	{name: "connect_public_udp", args: probe("exchange-udp", "203.0.113.1:53"), want: "DENIED ECONNREFUSED"},
	{name: "connect_public_ipv6", args: probe("exchange-tcp", "[2001:db8::1]:443"), want: "DENIED ECONNRESET"},
	{name: "connect_public_udp_ipv6", args: probe("exchange-udp", "[2001:db8::1]:443"), want: "DENIED ECONNREFUSED"},
	// Cloud metadata: instance credentials.
	{name: "connect_cloud_metadata", args: probe("exchange-tcp", "169.254.169.254:80"), want: "DENIED ECONNRESET"},
	{name: "connect_private_range", args: probe("exchange-tcp", "10.255.255.1:22"), want: "DENIED ECONNRESET"},
	{name: "connect_host_address", setup: needHostIP,
		args: probe("exchange-tcp", "{hostip}:22"), want: "DENIED ECONNRESET"},
	// The floor holds for captured connections even when the policy
	// allows everything.
	{name: "connect_cloud_metadata_allow_mode", flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "169.254.169.254:80"), want: "DENIED ECONNRESET"},
	{name: "connect_cloud_metadata_mapped_allow_mode", flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "[::ffff:169.254.169.254]:80"), want: "DENIED ECONNRESET"},
	{name: "connect_metadata_v6_allow_mode", flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "[fd00:ec2::254]:80"), want: "DENIED ECONNRESET"},
	{name: "connect_private_range_allow_mode", flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "10.255.255.1:22"), want: "DENIED ECONNRESET"},
	{name: "connect_host_address_allow_mode", setup: needHostIP, flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "{hostip}:22"), want: "DENIED ECONNRESET"},
	// The capture listener reached directly, not through the rules: its
	// original destination is itself, in the floor.
	{name: "connect_capture_listener", flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "127.0.0.1:3129"), want: "DENIED ECONNRESET"},
	{name: "connect_capture_listener_ipv6", flags: []string{"--agent-policy", "allow"},
		args: probe("exchange-tcp", "[::1]:3129"), want: "DENIED ECONNRESET"},
	// The capture rules and routes are init's: the command holds no
	// CAP_NET_ADMIN to flush them, delete the table or add a route.
	{name: "nft_flush_ruleset", args: probe("nft-flush"), want: "DENIED EPERM"},
	{name: "nft_delete_capture_table", args: probe("nft-delete-table", "stockade"), want: "DENIED EPERM"},
	{name: "route_add", args: probe("route-add", "198.51.100.0/24"), want: "DENIED EPERM"},
	{name: "route_add_ipv6", args: probe("route-add", "2001:db8::/32"), want: "DENIED EPERM"},
	// The sandbox's 127.0.0.1 is its own: the host's loopback services are not there.
	{name: "connect_host_loopback", args: probe("connect-tcp", "127.0.0.1:{hostport}"), want: "DENIED ECONNREFUSED"},
	// Abstract unix sockets belong to the network namespace (and Landlock scopes
	// them): a host daemon's abstract socket (X11, dbus, containerd) is not reachable.
	{name: "connect_host_abstract_socket", args: probe("connect-abstract", "{abstract}"), want: "DENIED ECONNREFUSED"},
	// The SSH agent's socket lives in the host's /tmp, not the sandbox's.
	{name: "connect_ssh_agent", args: probe("connect-unix", "{agentsock}"), want: "DENIED ENOENT"},
	// A host server's unix socket inside a tree the sandbox sees: a
	// read-only bind and Landlock (ABI 7) leave connect(2) alone, and the
	// sandbox runs as the socket's owner. A tmux server's socket there
	// runs any command on the host. Masked at start: an empty file.
	{name: "connect_host_socket_in_workdir", setup: func(fx *fixture) error { return listenUnix(filepath.Join(fx.work, "tmp", "dev.sock")) },
		args: probe("connect-unix", "{work}/tmp/dev.sock"), want: "DENIED EACCES"},
	{name: "connect_host_socket_in_ro_tree", setup: func(fx *fixture) error { return listenUnix(filepath.Join(fx.other, "run", "tmux.sock")) },
		flags: []string{"--ro", "{other}"}, args: probe("connect-unix", "{other}/run/tmux.sock"), want: "DENIED EACCES"},
	{name: "af_packet", args: probe("socket", "AF_PACKET", "SOCK_RAW", "ETH_P_ALL"), want: "DENIED EPERM"},
	{name: "af_packet_high_bits", args: probe("socket-hibits", "AF_PACKET", "SOCK_RAW", "ETH_P_ALL"), want: "DENIED EPERM"},
	{name: "af_inet_sock_packet", args: probe("socket", "AF_INET", "SOCK_PACKET", "ETH_P_ALL"), want: "DENIED EPERM"},
	{name: "af_vsock", args: probe("socket", "AF_VSOCK", "SOCK_STREAM", "0"), want: "DENIED EPERM"},
	{name: "raw_ipv4", args: probe("socket", "AF_INET", "SOCK_RAW", "IPPROTO_RAW"), want: "DENIED EPERM"},
	{name: "raw_ipv6", args: probe("socket", "AF_INET6", "SOCK_RAW", "IPPROTO_RAW"), want: "DENIED EPERM"},
	// MPTCP subflows are not covered by Landlock's TCP rules.
	{name: "mptcp", args: probe("socket", "AF_INET", "SOCK_STREAM", "IPPROTO_MPTCP"), want: "DENIED EPERM"},
	{name: "mptcp_ipv6", args: probe("socket", "AF_INET6", "SOCK_STREAM", "IPPROTO_MPTCP"), want: "DENIED EPERM"},
	// Families above AF_PACKET: rarely used, often buggy (AF_ALG, AF_TIPC, AF_RDS...).
	{name: "af_alg", args: probe("socket", "AF_ALG", "SOCK_SEQPACKET", "0"), want: "DENIED EPERM"},
	{name: "af_tipc", args: probe("socket", "AF_TIPC", "SOCK_RDM", "0"), want: "DENIED EPERM"},
	{name: "af_rds", args: probe("socket", "AF_RDS", "SOCK_SEQPACKET", "0"), want: "DENIED EPERM"},
	{name: "af_xdp", args: probe("socket", "AF_XDP", "SOCK_RAW", "0"), want: "DENIED EPERM"},
	{name: "af_bluetooth", args: probe("socket", "AF_BLUETOOTH", "SOCK_RAW", "0"), want: "DENIED EPERM"},
}

func needHostIP(fx *fixture) error {
	if fx.host.hostIP == "" {
		return errors.New("the host has no non-loopback IPv4 address to aim at")
	}
	return nil
}

// listenUnix serves a line on a unix socket at path, from the host side of
// the test, for as long as the test process lives.
func listenUnix(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host\n"))
			c.Close()
		}
	}()
	return nil
}
