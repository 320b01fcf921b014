package agent

import (
	"fmt"
	"strings"

	"github.com/stockade-dev/stockade/internal/denial"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// GuideInput is what the guide says about the sandbox; only what is true
// for the session's policy goes in.
type GuideInput struct {
	Session string
	Workdir string
	Home    string
	RW      []string
	Network string // "proxy" or "none"
	// Capture: direct TCP connections are captured and decided by the
	// rules (network proxy without --containers; docs/egress.md).
	Capture  bool
	Mode     string   // agent policy: "deny" or "allow"
	Allowed  []string // allow rules
	Blocked  []string
	Routes   []string // provider routes through the auth proxy
	Protects []string // protected patterns
}

// Guide is the short text the agent gets about its sandbox.
func Guide(in GuideInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You run inside a stockade sandbox (session %s).\n\n", in.Session)
	fmt.Fprintf(&b, "Files: you can write %s (the project), %s (your home) and /tmp", in.Workdir, in.Home)
	for _, p := range in.RW {
		fmt.Fprintf(&b, ", %s", p)
	}
	b.WriteString("; everything else is read-only or absent. ")
	if len(in.Protects) > 0 {
		fmt.Fprintf(&b, "These paths in the project are read-only on purpose: %s. ", strings.Join(in.Protects, ", "))
	}
	b.WriteString("Files such as .env read empty: that is the sandbox hiding secrets, not a bug.\n\n")
	switch {
	case in.Network == "none":
		b.WriteString("Network: none. Only 127.0.0.1 inside the sandbox works.\n")
	case in.Mode == "allow":
		b.WriteString("Network: public hosts are reachable through the proxy; private, loopback and cloud metadata addresses are refused.\n")
	default:
		if len(in.Allowed) == 0 {
			b.WriteString("Network: no host outside is allowed.")
		} else {
			fmt.Fprintf(&b, "Network: only these hosts are allowed: %s.", strings.Join(in.Allowed, ", "))
		}
		b.WriteString(" Tools use the proxy set in HTTP_PROXY/HTTPS_PROXY/ALL_PROXY")
		if in.Capture {
			b.WriteString("; a direct TCP connection is captured and decided by the same rules, and other UDP than DNS is refused.\n")
		} else {
			b.WriteString("; a program that ignores those variables cannot connect out.\n")
		}
	}
	if in.Network != "none" {
		fmt.Fprintf(&b, "A request refused by the network policy gets HTTP 403 (or a SOCKS5 refusal) with a body naming the host and the rule. "+
			"When a connection fails without saying why (\"CONNECT tunnel failed, response 403\", a name that does not resolve, a TLS error), "+
			"read %s: one line per denial, newest last, with the host, the port, the rule that refused it and the command that allows it. "+
			"%s"+
			"Do not retry or look for a way around it: tell the user, who can allow the host with:\n  stockade network agent allow -s %s HOST\n", denial.Path, direct(in.Capture), in.Session)
	}
	if len(in.Routes) > 0 {
		fmt.Fprintf(&b, "\nModel API keys: the %s key in your environment is a placeholder that only works through the local proxy at http://%s; the real key is kept outside the sandbox.\n",
			strings.Join(in.Routes, ", "), sandboxnet.AuthAddr)
	}
	return b.String()
}

// direct is what the guide says of a program that ignores the proxy
// variables: captured, its denial is a line like any other; without
// capture (--containers) it fails at once and leaves none. The guide is
// written before the sandbox exists, and the kernel may still refuse the
// capture rules (stockade then warns the user and runs without them), so
// the capture text also says how that case shows itself.
func direct(capture bool) string {
	if capture {
		return "A direct connection (a program that ignores the proxy variables) is captured: when refused it is reset (\"connection reset by peer\", ECONNRESET) and leaves a capture line there too. " +
			"Only where this machine's kernel refused the capture rules does it fail at once with ENETUNREACH (\"network is unreachable\") instead, and leave no line: then point it at the proxy. "
	}
	return "This sandbox has no capture of direct connections: a program that ignores the proxy variables fails with ENETUNREACH (\"network is unreachable\") and leaves no line there; point it at the proxy. "
}
