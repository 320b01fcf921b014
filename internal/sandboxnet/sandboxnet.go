// Package sandboxnet is the one owner of the facts of the sandbox's network
// view that several packages must agree on: where init makes the listeners
// inside the sandbox's network namespace (the HTTP and SOCKS5 proxies, the
// DNS stub, the auth proxy), the proxy variables that point tools at them,
// and the placeholder API key the command presents to the auth proxy in place
// of the real one. The sandbox, the proxies, the agent profiles and the
// command line import these; TestOneOwner fails when a copy of one of them
// appears as a literal anywhere else outside tests.
//
// It is constants and one function, with no dependencies, so that init's
// code may use it.
package sandboxnet

// Host is the address inside the sandbox that every listener binds: its
// network namespace has only lo.
const Host = "127.0.0.1"

// The listeners init makes inside the sandbox; the supervisor serves them
// from the host's network namespace.
const (
	HTTPProxyAddr = Host + ":3128" // HTTP_PROXY, HTTPS_PROXY
	SOCKS5Addr    = Host + ":1080" // ALL_PROXY=socks5h://…
	// DNSAddr is the DNS stub, on UDP and TCP; the sandbox's resolv.conf
	// names Host as its nameserver.
	DNSAddr  = Host + ":53"
	AuthAddr = Host + ":2376" // the auth proxy
	// SlurmAddr is the Slurm chaperon (package slurm), there only in a
	// sandbox started with --slurm.
	SlurmAddr = Host + ":6820"
	// CapturePort is where the sandbox's nftables rules redirect every
	// TCP connection to a non-loopback address (package capture): to
	// CaptureAddr for IPv4 and CaptureAddr6 for IPv6. One dual-stack
	// listener on CaptureBind takes both (CaptureAddr alone where the
	// kernel has no IPv6).
	CapturePort  = 3129
	CaptureAddr  = Host + ":3129"
	CaptureAddr6 = "[::1]:3129"
	CaptureBind  = "[::]:3129"
)

// SSHAgentDir is where the sandbox sees, read-only, the directory of the
// socket of the SSH agent filter (--ssh, package sshagent), and
// SSHAgentSock is that socket: the sandbox's SSH_AUTH_SOCK.
const (
	SSHAgentDir  = "/run/stockade/ssh-agent"
	SSHAgentSock = SSHAgentDir + "/agent.sock"
)

// GitHubDir is where the sandbox sees, read-only, the directory of the
// auth proxy's socket for the gh CLI (--gh) and gh's configuration, which
// names it (GH_CONFIG_DIR); GitHubSock is that socket.
const (
	GitHubDir  = "/run/stockade/gh"
	GitHubSock = GitHubDir + "/http.sock"
)

// AuthURL is the base URL of the auth proxy; route R is AuthURL + "/R".
const AuthURL = "http://" + AuthAddr

// DummyKey is the only API key the sandboxed command ever holds: the auth
// proxy accepts it and puts the real key in on the way out.
const DummyKey = "sk-proxy"

// ProxyEnv returns the variables that point the tools in the sandbox at the
// proxies, in both spellings: curl and Go read the lower case, others the
// upper. The map is the caller's.
func ProxyEnv() map[string]string {
	const (
		httpURL  = "http://" + HTTPProxyAddr
		socksURL = "socks5h://" + SOCKS5Addr
		local    = "localhost," + Host + ",::1"
	)
	return map[string]string{
		"HTTP_PROXY": httpURL, "HTTPS_PROXY": httpURL,
		"http_proxy": httpURL, "https_proxy": httpURL,
		"ALL_PROXY": socksURL, "all_proxy": socksURL,
		"NO_PROXY": local, "no_proxy": local,
	}
}

// PodHost is where the containers of a sandbox's engine (--containers)
// reach stockade: an address the engine's launcher puts on the sandbox's lo,
// outside 127.0.0.0/8. A container's slirp4netns opens its sockets in the
// sandbox's network namespace and refuses the loopback range (it runs
// without allow_host_loopback), so a container reaches PodHost and
// nothing else of the sandbox: not the command's own proxies on Host, which
// serve the agent's policy, while these serve the pods'. Link-local: it is
// nowhere but on this link.
const PodHost = "169.254.1.1"

// The listeners of the pods' proxies, on PodHost; the supervisor serves
// them with the pods' policy.
const (
	PodHTTPProxyAddr = PodHost + ":3128"
	PodSOCKS5Addr    = PodHost + ":1080"
	PodDNSAddr       = PodHost + ":53" // UDP and TCP
)

// RegistryProxyAddr is the HTTP proxy of the engine's own traffic, its
// image pulls: it lets out only the registries --registry-allow names. It
// is on Host, where no container's slirp4netns reaches.
const RegistryProxyAddr = Host + ":3130"

// PodProxyEnv returns the proxy variables every container of the engine
// gets, in both spellings, as NAME=VALUE.
func PodProxyEnv() []string {
	const (
		httpURL  = "http://" + PodHTTPProxyAddr
		socksURL = "socks5h://" + PodSOCKS5Addr
		local    = "localhost," + Host + ",::1"
	)
	return []string{
		"HTTP_PROXY=" + httpURL, "HTTPS_PROXY=" + httpURL,
		"http_proxy=" + httpURL, "https_proxy=" + httpURL,
		"ALL_PROXY=" + socksURL, "all_proxy=" + socksURL,
		"NO_PROXY=" + local, "no_proxy=" + local,
	}
}
