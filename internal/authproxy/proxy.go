package authproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stockade-dev/stockade/internal/accept"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Defaults of the Config fields left zero, and of the wiring.
const (
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultMaxConns caps the agent's connections open at once: above the
	// thousand streams an agent that fans out to sub-agents may hold
	// (TestConcurrentStreams).
	DefaultMaxConns = 1024
	maxHeaderBytes  = 64 << 10
	minKeyLen       = 8
)

// Audit event names, as internal/audit knows them.
const (
	EventRequest = "auth_request"
	EventDenied  = "auth_denied"
	EventWarning = "warning"
)

// Route is where one route forwards and with which key.
type Route struct {
	Upstream *url.URL // base URL; the path after /<route> is joined to its path
	Key      string   // the real key; never leaves the supervisor except to Upstream
	Style    Style    // where Key is sent: XAPIKey, Bearer or GoogAPIKey
}

// Config configures a Proxy. New copies it; changing it later has no effect.
type Config struct {
	// Routes maps a route name from the table (Names) to its upstream and key.
	Routes map[string]Route
	// Dummy is the key the sandbox holds; "" means sandboxnet.DummyKey.
	Dummy string
	// Audit receives one event per request, from many goroutines at once;
	// nil discards them.
	Audit func(event string, fields map[string]any)
	// Transport makes the upstream requests; nil means a tuned
	// http.Transport (HTTP/2, TLS ≥ 1.2, transparent gzip so that responses
	// can be scrubbed, the host's proxy variables honored).
	Transport http.RoundTripper
	// AllowHTTP names the routes whose upstream may be plain http: only when
	// the user asked (--upstream ROUTE=http://…).
	AllowHTTP map[string]bool
	// ShutdownTimeout bounds how long Close waits for requests in flight
	// (streams included); 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// HostRoutes route the requests that come in on a unix socket by
	// their Host header (lower case) instead of their first path segment:
	// a client that can be given a socket but not a base URL (gh's
	// http_unix_socket) sends the requests it would send to that host, in
	// the clear. Every route named must be in Routes.
	HostRoutes map[string]string
	// MaxConns caps the client connections open at once over every
	// listener; each costs the server a descriptor, and one more upstream.
	// Connections over it get a 503 (counted, one warning); 0 means
	// DefaultMaxConns.
	MaxConns int
}

// Proxy is the auth proxy of one session. It is an http.Handler, and Serve
// serves it on listeners.
type Proxy struct {
	cfg       Config
	routes    map[string]*route
	names     []string // of routes, sorted
	transport http.RoundTripper
	srv       *http.Server
	clients   *accept.Cap
}

// route is a configured route with its reverse proxy.
type route struct {
	Route
	prov Provider
	rp   *httputil.ReverseProxy
}

// New checks cfg and returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Dummy == "" {
		cfg.Dummy = sandboxnet.DummyKey
	}
	if !printable(cfg.Dummy) {
		return nil, errors.New("configuring the auth proxy: the dummy key must be printable ASCII without spaces")
	}
	if cfg.Audit == nil {
		cfg.Audit = func(string, map[string]any) {}
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.Transport == nil {
		cfg.Transport = defaultTransport()
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	p := &Proxy{cfg: cfg, routes: map[string]*route{}, transport: cfg.Transport}
	for name, r := range cfg.Routes {
		rt, err := p.newRoute(name, r)
		if err != nil {
			return nil, fmt.Errorf("configuring auth proxy route %s: %w", name, err)
		}
		p.routes[name] = rt
		p.names = append(p.names, name)
	}
	slices.Sort(p.names)
	for host, name := range cfg.HostRoutes {
		if p.routes[name] == nil || host != strings.ToLower(host) {
			return nil, fmt.Errorf("configuring the auth proxy: host %s: no configured route %q", host, name)
		}
	}
	p.clients = accept.NewCap(cfg.MaxConns, func(max int) {
		cfg.Audit(EventWarning, map[string]any{"message": fmt.Sprintf(
			"auth proxy: %d connections open, its cap; further connections are refused and counted until some close", max)})
	})
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		// OPTIONS * too must reach admit, to be refused like any non-origin form.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     log.New(io.Discard, "", 0),
	}
	return p, nil
}

func (p *Proxy) newRoute(name string, r Route) (*route, error) {
	prov, ok := LookupProvider(name)
	switch {
	case !ok || prov.Name != name:
		return nil, fmt.Errorf("unknown route; known routes: %s", strings.Join(Names(), ", "))
	case r.Upstream == nil:
		return nil, errors.New("no upstream")
	case len(r.Key) < minKeyLen || !printable(r.Key):
		return nil, fmt.Errorf("the key is not an API key (printable ASCII, at least %d characters)", minKeyLen)
	case r.Key == p.cfg.Dummy || strings.Contains(r.Key, p.cfg.Dummy) || strings.Contains(p.cfg.Dummy, r.Key):
		return nil, errors.New("the real key and the dummy key overlap")
	case r.Style != XAPIKey && r.Style != Bearer && r.Style != GoogAPIKey && r.Style != Token:
		return nil, fmt.Errorf("cannot send a key as %v", r.Style)
	}
	if err := checkUpstream(r.Upstream, p.cfg.AllowHTTP[name]); err != nil {
		return nil, err
	}
	u := *r.Upstream // never share the caller's URL
	r.Upstream = &u
	rt := &route{Route: r, prov: prov}
	rt.rp = &httputil.ReverseProxy{
		Rewrite:        rt.rewrite,
		Transport:      p.transport,
		FlushInterval:  -1, // flush after every write: SSE goes through chunk by chunk
		ModifyResponse: rt.modifyResponse,
		ErrorHandler:   rt.upstreamError,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	return rt, nil
}

func defaultTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		ReadBufferSize:         64 << 10,
		WriteBufferSize:        64 << 10,
	}
}

// Names returns the configured route names, sorted.
func (p *Proxy) Names() []string { return slices.Clone(p.names) }

// Serve serves the proxy on l until Close; it then returns nil.
func (p *Proxy) Serve(l net.Listener) error {
	msg := fmt.Sprintf("stockade: the auth proxy holds its cap of %d connections; close some and retry", p.clients.Max())
	err := p.srv.Serve(p.clients.Listen(l, accept.RefuseHTTP(msg)))
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving the auth proxy on %s: %w", l.Addr(), err)
}

// Refused returns how many client connections were refused over the cap,
// and the cap.
func (p *Proxy) Refused() (n uint64, max int) { return p.clients.Refused(), p.clients.Max() }

// Close stops accepting, waits up to ShutdownTimeout for requests in flight
// (streams included) to finish, then cuts the rest. It returns an error
// when it had to cut.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		p.srv.Close()
		err = fmt.Errorf("closing the auth proxy: requests still running after %v were cut: %w", p.cfg.ShutdownTimeout, err)
	}
	if t, ok := p.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return err
}

// ServeHTTP admits the request, forwards it to its route's upstream with the
// real key, and records one audit event.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt, path, d := p.admit(r)
	if d != nil {
		p.refuse(w, r, rt, path, d)
		return
	}
	model := requestModel(r, path)
	body := &countingBody{ReadCloser: r.Body}
	if r.Body != nil {
		r.Body = body
	}
	sw := &responseWriter{ResponseWriter: w, key: rt.Key}
	record := func(cut error) {
		f := map[string]any{
			"provider": rt.prov.Name, "method": r.Method, "path": logPath(path), "status": sw.status,
			"request_bytes": body.n.Load(), "response_bytes": sw.n, "duration_ms": time.Since(start).Milliseconds(),
		}
		if model != "" {
			f["model"] = model
		}
		switch {
		case sw.err != nil:
			f["error"] = sw.err.Error()
		case cut != nil:
			f["error"] = cut.Error()
		}
		p.cfg.Audit(EventRequest, f)
	}
	// A streamed answer whose copy fails (the agent closed the connection
	// once it had what it wanted, the upstream broke off) ends in the
	// ReverseProxy's panic(http.ErrAbortHandler), which the server turns
	// into a cut connection. The request went out with the real key all
	// the same: it is recorded before the panic goes on.
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				record(errAnswerCut)
			}
			panic(v)
		}
	}()
	// Full duplex: by default the HTTP/1 server, when the answer's header
	// goes out, drains and closes what is left of the request body. The
	// transport may still be reading it: past Content-Length, to check
	// that it ends there (the upstream has the whole body and answers
	// meanwhile), or all of it when the upstream answers early. That read
	// then fails, and the transport closes the upstream connection with
	// the answer half copied: the agent's stream ends in unexpected EOF.
	// HTTP/2 is full duplex already (ErrNotSupported).
	http.NewResponseController(w).EnableFullDuplex()
	rt.rp.ServeHTTP(sw, r)
	if sw.refused != nil { // nothing of the answer was written
		clear(w.Header())
		p.refuse(w, r, rt, path, sw.refused)
		return
	}
	scrubHeader(w.Header(), rt.Key) // trailers, set after the body
	record(nil)
}

// errAnswerCut is the error of a request whose answer was cut off while it
// was copied to the client.
var errAnswerCut = errors.New("the answer was cut off while it was copied: the client or the upstream closed the connection")

// responseWriter records status and size, and scrubs the headers at every
// WriteHeader (1xx, final, errors).
type responseWriter struct {
	http.ResponseWriter
	key     string
	status  int
	n       int64
	err     error   // from the upstream round trip
	refused *denial // the upstream's answer, refused by checkAnswer
}

func (w *responseWriter) WriteHeader(code int) {
	scrubHeader(w.Header(), w.key)
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController (used by ReverseProxy) flush and hijack.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the request bytes the transport reads, from its own
// goroutine.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}
