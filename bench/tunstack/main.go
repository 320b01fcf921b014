// Command tunstack measures two ways of capturing every TCP connection a
// sandboxed program makes (a benchmark, not product code):
//
//   - nft: what stockade does (package internal/capture): in the client's
//     network namespace, only lo, a local default route through it and an
//     nftables redirect in the output hook to a listener whose socket
//     belongs to that namespace; the relay, outside, reads SO_ORIGINAL_DST
//     and dials the real server, splicing both ways;
//   - tun: a TUN device as the client's default route, its descriptor held
//     by a relay outside the namespace that serves it with gVisor's
//     user-space TCP/IP stack (link/fdbased, tcp.NewForwarder): each
//     connection's original destination is its endpoint's local address.
//
// Both against a direct connection over a veth pair. As root:
//
//	tunstack run [-rounds 15] [-samples 200] [-setup 40]
//
// builds the namespaces (tsb-*; 198.51.100.0/24 and 2001:db8:5100::/56),
// starts the server and the relays as processes of their own, and prints
// markdown tables. The other subcommands are what run starts; run.sh
// beside this file builds the program and runs it.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tunstack run|serve|relay|client|setup|noop [flags]")
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "run":
		err = runBench(args)
	case "serve":
		err = serve(args)
	case "relay":
		err = relay(args)
	case "client":
		err = client(args)
	case "setup":
		err = setupBench(args)
	case "noop":
		// process start, to compare a binary with and without the netstack
	default:
		err = fmt.Errorf("unknown subcommand %q", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tunstack %s: %v\n", cmd, err)
		os.Exit(1)
	}
}
