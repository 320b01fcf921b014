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
