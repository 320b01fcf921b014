package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// LookupTimeout bounds one resolution, retries included.
const LookupTimeout = 5 * time.Second

// Resolver is the supervisor's own name resolution, done outside the
// sandbox. Every name the proxies dial and every answer the DNS stub gives
// comes from it, never from the sandbox.
type Resolver struct {
	server string // host:port, or "" for the system's configuration
	r      *net.Resolver
}

// NewResolver returns a resolver that asks server (ADDR or ADDR:PORT, port 53
// by default; IPv6 in brackets with a port) over UDP, falling back to TCP for
// truncated answers. With server "" it uses the host's configuration
// (/etc/resolv.conf, /etc/hosts and /etc/nsswitch.conf, through Go's own
// resolver; see ResolvConfServer for the first nameserver alone).
func NewResolver(server string) (*Resolver, error) {
	if server == "" {
		return &Resolver{r: &net.Resolver{PreferGo: true}}, nil
	}
	addr, err := parseServer(server)
	if err != nil {
		return nil, fmt.Errorf("parsing resolver address %q: %w", server, err)
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return &Resolver{server: addr, r: &net.Resolver{PreferGo: true, Dial: dial}}, nil
}

// Server returns the upstream server, or "" for the system's configuration.
func (r *Resolver) Server() string { return r.server }

func parseServer(s string) (string, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 53).String(), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return "", errors.New("want an IP address, optionally with a port")
	}
	if ap.Port() == 0 {
		return "", errors.New("port 0")
	}
	return ap.String(), nil
}

// LookupAddrs returns the IPv4 and IPv6 addresses of name.
func (r *Resolver) LookupAddrs(ctx context.Context, name string) ([]netip.Addr, error) {
	return r.lookup(ctx, "ip", name)
}

// Lookup4 returns the IPv4 addresses of name.
func (r *Resolver) Lookup4(ctx context.Context, name string) ([]netip.Addr, error) {
	return r.lookup(ctx, "ip4", name)
}

// Lookup6 returns the IPv6 addresses of name.
func (r *Resolver) Lookup6(ctx context.Context, name string) ([]netip.Addr, error) {
	return r.lookup(ctx, "ip6", name)
}

func (r *Resolver) lookup(ctx context.Context, network, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, LookupTimeout)
	defer cancel()
	// The trailing dot makes the name absolute: the host's search domains
	// must not turn the name that was checked into another one.
	addrs, err := r.r.LookupNetIP(ctx, network, strings.TrimSuffix(name, ".")+".")
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", name, err)
	}
	return addrs, nil
}

// ResolvConfServer returns the first nameserver of a resolv.conf file
// (normally /etc/resolv.conf) as ADDR:53, the default of --resolver.
func ResolvConfServer(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading nameservers: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			// A link-local nameserver may carry a zone, which netip keeps.
			if a, err := netip.ParseAddr(fields[1]); err == nil {
				return netip.AddrPortFrom(a, 53).String(), nil
			}
		}
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("reading nameservers from %s: %w", path, err)
	}
	return "", fmt.Errorf("reading nameservers from %s: none found", path)
}

// isNotFound reports whether err says the name has no such record.
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
