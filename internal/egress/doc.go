// Package egress is the only way out of a sandbox's network namespace: an
// HTTP proxy, a SOCKS5 proxy, a DNS stub and the capture server (every other
// TCP connection, redirected by the namespace's nftables rules) that the
// supervisor serves on listening sockets created inside the namespace
// (where only lo exists) and that connect out from the host on the
// sandbox's behalf, under a policy that can change while the session runs.
//
// # Using it
//
//	rules := egress.NewRules(egress.ModeDeny, allow, block) // allow, block from ParseRule
//	res, err := egress.NewResolver(resolverFlag)            // "" = the host's configuration
//	p := egress.New(egress.Config{
//		Session: id, Rules: rules, Resolver: res,
//		HostAddrs: hostAddrs, // from net.InterfaceAddrs
//		Audit: func(ev string, f map[string]any) { w.Log(audit.SourceEgress, ev, f) },
//	})
//	go p.ServeHTTPProxy(httpLn) // sandboxnet.HTTPProxyAddr inside
//	go p.ServeSOCKS5(socksLn)   // sandboxnet.SOCKS5Addr
//	go p.ServeDNS(dnsUDP)       // sandboxnet.DNSAddr
//	go p.ServeDNSTCP(dnsTCP)
//	go p.ServeCapture(captureLn) // sandboxnet.CaptureBind: CaptureAddr, CaptureAddr6
//	...
//	rules.Allow(r) // from the control API; applies to the next connection
//	p.Close()      // closes everything and waits for every handler
//
// # How a destination is decided
//
// Every server turns a request into (host, port) and asks the same Decider,
// then hands an allowed Decision to the same Dialer:
//
//  1. Block rules first: a block rule that matches wins over any allow rule.
//  2. A name must be allowed by a name rule (example.com, *.example.com,
//     optionally with :port), or the mode must be "allow". An IP rule never
//     allows a name, and a name rule never allows an IP literal.
//  3. A name is resolved by the supervisor (Resolver), and every address is
//     checked: block IP rules, then the floor (floor.go: loopback, RFC 1918,
//     CGNAT, link-local and cloud metadata, multicast, reserved, IPv6 ULA
//     and link-local, v4-mapped, NAT64, 6to4 and Teredo forms of those, the
//     host's own addresses). Only an explicit IP or CIDR allow rule naming
//     the address lifts the floor; the mode and name rules never do.
//     Addresses in the floor are dropped; if none is left, the connection is
//     denied with the first one's reason ("resolves to 10.0.0.5, a private
//     address (RFC 1918)").
//  4. The Dialer dials the addresses that were checked, never the name, so
//     a second lookup cannot answer differently (DNS rebinding).
//
// Names are compared in ASCII: Unicode names are converted with the IDNA
// Lookup profile, lower-cased, one trailing dot dropped; what is not a valid
// hostname is denied. Hostname rules keep matching by name: nothing is
// pinned to the address a name had when the rule was added.
//
// Decider and Dialer do not know which protocol asked. The capture server
// (capture.go; the rules are package capture's) plugs in the same way: it
// takes the original destination (SO_ORIGINAL_DST), decides on the name
// the client sends first (the server name of a TLS ClientHello, the Host
// of plain HTTP) and the original port, else on the name the DNS stub
// answered the address for (DecideAt), else on the address, and dials the
// Decision.
//
// # What a denied agent sees
//
// The HTTP proxy answers 403 with X-Stockade-Denied: <reason> and a text
// body naming the host, the rule and the command a human runs
// (stockade network agent allow -s ID HOST; reset for a block rule). SOCKS5
// answers reply 2 (not allowed by ruleset), 4 when the name does not
// resolve, 5 when the destination refuses. The DNS stub answers NXDOMAIN for
// a denied name and never sends it upstream.
//
// # Limitations
//
//   - Upstream HTTP connections are not kept alive (each request is decided
//     and dialed afresh); the client's connection to the proxy is.
//   - The DNS stub answers A and AAAA only; every other type of an allowed
//     name gets an empty answer. TTLs are always DNSTTL.
//   - Connections already open when a rule changes stay open.
//   - A captured TLS connection is not terminated: a client that sends an
//     allowed server name reaches that name's addresses whatever it says
//     inside (domain fronting), as through CONNECT. A captured connection
//     that sends nothing for sniffWait (a protocol where the server speaks
//     first) is decided without a name of its own, that much later.
//   - The documentation ranges (192.0.2.0/24, 198.51.100.0/24,
//     203.0.113.0/24, 2001:db8::/32) are not in the floor: they route
//     nowhere, and tests use them as public hosts.
package egress
