package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Defaults of the Config fields left zero.
const (
	DefaultIdleTimeout = 5 * time.Minute
	DefaultDialTimeout = 10 * time.Second
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
)

// Config configures a Proxy.
type Config struct {
	// Session is the session ID named in the commands a denial suggests.
	Session string
	// Rules is the policy; nil denies everything.
	Rules *Rules
	// Resolver resolves names; nil uses the host's configuration.
	Resolver *Resolver
	// HostAddrs are the host's own addresses, refused like private ones.
	HostAddrs []netip.Addr
	// Audit receives one event per connection and per denied DNS question,
	// from many goroutines at once; nil discards them.
	Audit func(event string, fields map[string]any)
	// Dial makes outbound connections, always to an address:port that was
	// checked; nil uses a net.Dialer with DefaultDialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// IdleTimeout closes a connection or tunnel idle in both directions for
	// that long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Proxy serves the egress endpoints of one session. Its Serve methods may run
// at the same time, on any number of listeners; Close stops them all.
type Proxy struct {
	cfg     Config
	decider *Decider
	dialer  *Dialer
	dns     *dnsStub
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
	p := &Proxy{
		cfg:       cfg,
		decider:   &Decider{Rules: cfg.Rules, Resolver: cfg.Resolver, HostAddrs: cfg.HostAddrs, Session: cfg.Session},
		dialer:    &Dialer{Dial: cfg.Dial},
		listeners: map[io.Closer]struct{}{},
		conns:     map[net.Conn]struct{}{},
		servers:   map[*http.Server]struct{}{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.dns = newDNSStub(p)
	return p
}

// Decider returns the proxy's decider, for a server outside this package
// (a transparent mode) that must decide the same way.
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
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() {
				return nil
			}
			if !isTemporary(err) {
				return fmt.Errorf("accepting connections on %s: %w", l.Addr(), err)
			}
			// Out of descriptors or a client gone before accept: wait and
			// retry, as net/http does, instead of spinning or giving up.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
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

func isTemporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// auditDenied records a refused connection.
func (p *Proxy) auditDenied(proto string, dec Decision) {
	p.cfg.Audit(EventNetworkDenied, map[string]any{
		"proto": proto, "host": dec.Host, "port": int(dec.Port), "rule": dec.Rule, "reason": dec.Reason,
	})
}

// auditConn records a connection that was allowed, once it has ended.
func (p *Proxy) auditConn(proto string, dec Decision, addr netip.AddrPort, in, out int64, start time.Time, err error) {
	f := map[string]any{
		"proto": proto, "host": dec.Host, "port": int(dec.Port), "rule": dec.Rule,
		"bytes_in": in, "bytes_out": out, "duration_ms": time.Since(start).Milliseconds(),
	}
	if addr.IsValid() {
		f["addr"] = addr.String()
	}
	if err != nil {
		f["error"] = err.Error()
	}
	p.cfg.Audit(EventConnection, f)
}
