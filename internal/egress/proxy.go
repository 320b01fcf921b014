package egress

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/accept"
)

// Defaults of the Config fields left zero.
const (
	DefaultIdleTimeout = 5 * time.Minute
	DefaultDialTimeout = 10 * time.Second
	// DefaultMaxConns caps the client connections open at once: a browser
	// holds a few hundred at most, a package manager tens.
	DefaultMaxConns = 1024
	// MaxHeaderBytes caps an HTTP request's header and a SOCKS5 or DNS
	// message is far smaller by construction.
	MaxHeaderBytes = 64 << 10
	// handshakeTimeout bounds the time a client may take to say where it
	// wants to go.
	handshakeTimeout = 30 * time.Second
)

// Audit event names, as internal/audit knows them.
const (
	EventConnection    = "connection"
	EventNetworkDenied = "network_denied"
	EventDNSDenied     = "dns_denied"
	EventWarning       = "warning"
)

// Config configures a Proxy.
type Config struct {
	// Session is the session ID named in the commands a denial suggests.
	Session string
	// Foreground: the rules cannot change while the run lasts (a
	// foreground stockade run has no control socket), so a denial
	// suggests the flag of the next run instead of a network command.
	Foreground bool
	// Rules is the policy; nil denies everything.
	Rules *Rules
	// Resolver resolves names; nil uses the host's configuration.
	Resolver *Resolver
	// HostAddrs are the host's own addresses, refused like private ones.
	HostAddrs []netip.Addr
	// CurrentHostAddrs, when set, returns the host's addresses as they
	// are now, refused too (Decider.CurrentHostAddrs).
	CurrentHostAddrs func() []netip.Addr
	// Audit receives one event per connection and per denied DNS question,
	// from many goroutines at once; nil discards them.
	Audit func(event string, fields map[string]any)
	// Dial makes outbound connections, always to an address:port that was
	// checked; nil uses a net.Dialer with DefaultDialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// IdleTimeout closes a connection or tunnel idle in both directions for
	// that long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConns caps the client connections open at once over the HTTP,
	// SOCKS5, DNS-over-TCP and capture listeners together; each costs the server a
	// descriptor, two while tunneled. Connections over it are refused
	// (counted, one warning); 0 means DefaultMaxConns.
	MaxConns int
}

// Proxy serves the egress endpoints of one session. Its Serve methods may run
// at the same time, on any number of listeners; Close stops them all.
type Proxy struct {
	cfg     Config
	decider *Decider
	dialer  *Dialer
	dns     *dnsStub
	clients *accept.Cap
	ctx     context.Context // canceled by Close: ends lookups and dials
	cancel  context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[io.Closer]struct{}
	conns     map[net.Conn]struct{}
	servers   map[*http.Server]struct{}
	wg        sync.WaitGroup // one per running handler
}

// New returns a Proxy for cfg.
func New(cfg Config) *Proxy {
	if cfg.Rules == nil {
		cfg.Rules = NewRules(ModeDeny, nil, nil)
	}
	if cfg.Resolver == nil {
		cfg.Resolver, _ = NewResolver("") // cannot fail without a server
	}
	if cfg.Audit == nil {
		cfg.Audit = func(string, map[string]any) {}
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: DefaultDialTimeout}
		cfg.Dial = d.DialContext
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	p := &Proxy{
		cfg:       cfg,
		decider:   &Decider{Rules: cfg.Rules, Resolver: cfg.Resolver, HostAddrs: cfg.HostAddrs, CurrentHostAddrs: cfg.CurrentHostAddrs, Session: cfg.Session, Foreground: cfg.Foreground},
		dialer:    &Dialer{Dial: cfg.Dial},
		listeners: map[io.Closer]struct{}{},
		conns:     map[net.Conn]struct{}{},
		servers:   map[*http.Server]struct{}{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.dns = newDNSStub(p)
	p.clients = accept.NewCap(cfg.MaxConns, func(max int) {
		p.cfg.Audit(EventWarning, map[string]any{"message": fmt.Sprintf(
			"egress proxy: %d connections open, its cap; further connections are refused and counted until some close", max)})
	})
	return p
}

// Refused returns how many client connections were refused over the cap,
// and the cap.
func (p *Proxy) Refused() (n uint64, max int) { return p.clients.Refused(), p.clients.Max() }

// capped wraps a listener of the proxy under its connection cap.
func (p *Proxy) capped(l net.Listener, refuse func(net.Conn)) net.Listener {
	return p.clients.Listen(l, refuse)
}

// fullMessage is what a client refused over the cap is told.
func (p *Proxy) fullMessage() string {
	return fmt.Sprintf("stockade: session %s: the egress proxy holds its cap of %d connections; close some and retry",
		p.cfg.Session, p.clients.Max())
}

// Decider returns the proxy's decider, for a server outside this package
// that must decide the same way.
func (p *Proxy) Decider() *Decider { return p.decider }

// Close stops every server, closes every listener, client connection and
// outbound connection, and waits for the handlers to return. Serve methods
// then return nil.
func (p *Proxy) Close() error {
	p.cancel()
	p.mu.Lock()
	p.closed = true
	var closers []io.Closer
	for l := range p.listeners {
		closers = append(closers, l)
	}
	for c := range p.conns {
		closers = append(closers, c)
	}
	for s := range p.servers {
		closers = append(closers, s)
	}
	p.mu.Unlock()
	for _, c := range closers {
		c.Close() // errors here only say it was already closed
	}
	p.wg.Wait()
	return nil
}

// begin registers a handler; false means the proxy is closed.
func (p *Proxy) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// track registers c so that Close closes it; when the proxy is already
// closed it closes c and returns false.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	if !p.closed {
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		return true
	}
	p.mu.Unlock()
	c.Close()
	return false
}

// release closes c and forgets it.
func (p *Proxy) release(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) trackCloser(set func() bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && set()
}

func (p *Proxy) addListener(l io.Closer) bool {
	ok := p.trackCloser(func() bool { p.listeners[l] = struct{}{}; return true })
	if !ok {
		l.Close()
	}
	return ok
}

func (p *Proxy) removeListener(l io.Closer) {
	p.mu.Lock()
	delete(p.listeners, l)
	p.mu.Unlock()
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// serve accepts connections on l and runs handle on each in its own
// goroutine. The connection is tracked and closed when handle returns.
func (p *Proxy) serve(l net.Listener, handle func(net.Conn)) error {
	if !p.addListener(l) {
		return nil
	}
	defer p.removeListener(l)
	for {
		// l is wrapped by accept: it retries running out of descriptors
		// and returns only when it cannot accept any more.
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() {
				return nil
			}
			return fmt.Errorf("accepting connections on %s: %w", l.Addr(), err)
		}
		if !p.begin() {
			c.Close()
			return nil
		}
		if !p.track(c) {
			p.wg.Done()
			return nil
		}
		go func() {
			defer p.wg.Done()
			defer p.release(c)
			handle(c)
		}()
	}
}

// auditDenied records a refused connection, with the fields of extra
// (capture's original destination) added.
func (p *Proxy) auditDenied(proto string, dec Decision, extra ...map[string]any) {
	f := map[string]any{
		"proto": proto, "host": dec.Host, "port": int(dec.Port), "rule": dec.Rule, "reason": dec.Reason,
	}
	for _, e := range extra {
		maps.Copy(f, e)
	}
	if dec.Fix != "" {
		f["fix"] = dec.Fix
	}
	p.cfg.Audit(EventNetworkDenied, f)
}

// auditConn records a connection that was allowed, once it has ended,
// with the fields of extra added.
func (p *Proxy) auditConn(proto string, dec Decision, addr netip.AddrPort, in, out int64, start time.Time, err error, extra ...map[string]any) {
	f := map[string]any{
		"proto": proto, "host": dec.Host, "port": int(dec.Port), "rule": dec.Rule,
		"bytes_in": in, "bytes_out": out, "duration_ms": time.Since(start).Milliseconds(),
	}
	for _, e := range extra {
		maps.Copy(f, e)
	}
	if addr.IsValid() {
		f["addr"] = addr.String()
	}
	if err != nil {
		f["error"] = err.Error()
	}
	p.cfg.Audit(EventConnection, f)
}
