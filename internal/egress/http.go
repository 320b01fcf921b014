package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/accept"
)

// ServeHTTPProxy serves an HTTP proxy on l: CONNECT tunnels and
// absolute-form plain HTTP requests. It returns nil after Close.
func (p *Proxy) ServeHTTPProxy(l net.Listener) error {
	srv := &http.Server{
		Handler:           http.HandlerFunc(p.handleHTTP),
		ReadHeaderTimeout: handshakeTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	if !p.trackCloser(func() bool { p.servers[srv] = struct{}{}; return true }) {
		l.Close()
		return nil
	}
	err := srv.Serve(clientListener{p.capped(l, accept.RefuseHTTP(p.fullMessage()))})
	if errors.Is(err, http.ErrServerClosed) || p.isClosed() {
		return nil
	}
	return fmt.Errorf("serving the HTTP proxy on %s: %w", l.Addr(), err)
}

func (p *Proxy) handleHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.begin() {
		http.Error(w, "stockade: the proxy is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer p.wg.Done()
	if r.Method == http.MethodConnect {
		p.handleConnect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "stockade: this is an HTTP proxy; send absolute-form requests "+
			"(GET http://host/path) or CONNECT host:port, as HTTP_PROXY users do", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, "stockade: only http:// URLs are forwarded; use CONNECT for "+r.URL.Scheme, http.StatusBadRequest)
		return
	}
	port := uint16(80)
	if s := r.URL.Port(); s != "" {
		var err error
		if port, err = ParsePort(s); err != nil {
			http.Error(w, "stockade: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	p.forward(w, r, r.URL.Hostname(), port)
}

// handleConnect opens a tunnel: decide, dial, answer 200, splice.
func (p *Proxy) handleConnect(w http.ResponseWriter, r *http.Request) {
	host, portStr, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "stockade: CONNECT needs host:port: "+err.Error(), http.StatusBadRequest)
		return
	}
	port, err := ParsePort(portStr)
	if err != nil {
		http.Error(w, "stockade: "+err.Error(), http.StatusBadRequest)
		return
	}
	start := time.Now()
	dec := p.decider.Decide(r.Context(), host, port)
	if !dec.Allowed && !dec.Unresolved {
		p.deny(w, "connect", dec)
		return
	}
	var up net.Conn
	var addr netip.AddrPort
	if err = dec.Err; err == nil {
		up, addr, err = p.dialer.DialDecision(r.Context(), dec)
	}
	if err != nil {
		p.auditConn("connect", dec, addr, 0, 0, start, err)
		http.Error(w, "stockade: cannot reach "+dec.Target()+": "+err.Error(), http.StatusBadGateway)
		return
	}
	if !p.track(up) {
		return
	}
	defer p.release(up)
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "stockade: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	// Hijacked connections are no longer the server's: Close must find it.
	if !p.track(client) {
		return
	}
	defer p.release(client)
	var out int64
	if _, err = io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err == nil {
		// Bytes the client sent right behind the request (a TLS hello).
		if n := rw.Reader.Buffered(); n > 0 {
			b, _ := rw.Reader.Peek(n)
			_, err = up.Write(b)
			out = int64(n)
		}
	}
	var in int64
	if err == nil {
		var o int64
		o, in, err = splice(client, up, p.cfg.IdleTimeout)
		out += o
	}
	p.auditConn("connect", dec, addr, in, out, start, err)
}

// forward sends one plain HTTP request upstream. Upstream connections are
// not kept alive: each request is decided and dialed afresh, so a pooled
// connection can never outlive a rule change (the client's connection to the
// proxy is kept alive as usual).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, host string, port uint16) {
	start := time.Now()
	dec := p.decider.Decide(r.Context(), host, port)
	if !dec.Allowed && !dec.Unresolved {
		p.deny(w, "http", dec)
		return
	}
	if dec.Unresolved {
		p.auditConn("http", dec, netip.AddrPort{}, 0, 0, start, dec.Err)
		http.Error(w, "stockade: cannot reach "+dec.Target()+": "+dec.Reason, http.StatusBadGateway)
		return
	}
	st := &forwardState{dec: dec}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.Host = "" // the Host header follows the URL that was checked
			for k := range pr.Out.Header {
				if strings.HasPrefix(http.CanonicalHeaderKey(k), "Proxy-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			// A long body of known length is spliced once the head is
			// through (answer.go).
			if st.conn != nil && r.Method != http.MethodHead && resp.StatusCode >= 200 &&
				resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified &&
				resp.ContentLength >= spliceMin && len(resp.TransferEncoding) == 0 && !resp.Uncompressed {
				resp.Body = &answerBody{ReadCloser: resp.Body, w: w, up: st.conn, left: resp.ContentLength, idle: p.cfg.IdleTimeout}
			}
			return nil
		},
		Transport:  p.transport(st),
		BufferPool: forwardBuffers,
		ErrorLog:   log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			st.err = err
			http.Error(w, "stockade: cannot reach "+dec.Target()+": "+err.Error(), http.StatusBadGateway)
		},
	}
	// The reverse proxy ends the handler with a panic (http.ErrAbortHandler,
	// which the server swallows) when the response cannot be relayed to
	// the end, the client having gone: the request is audited all the same,
	// or an agent could upload and then hang up to leave no trace.
	defer func() {
		v := recover()
		if v != nil && st.err == nil {
			st.err = errAborted
			if v != http.ErrAbortHandler {
				st.err = fmt.Errorf("relaying the response: %v", v)
			}
		}
		var in, out int64
		if st.conn != nil {
			// The transport writes the request on a goroutine of its own and
			// may hand over the response before that write has returned and
			// been counted (which logged forwards with 0 bytes out): end the
			// connection, then wait for the writes and reads still in flight.
			p.release(st.conn.Conn)
			in, out = st.conn.settle()
		}
		p.auditConn("http", dec, st.addr, in, out, start, st.err)
		if v != nil {
			panic(v)
		}
	}()
	// The transport may still be sending the request's body when the
	// answer starts (a server that answers before it has read it all): in
	// its default half-duplex mode the server would then discard and close
	// that body under the transport, which closes the upstream connection
	// and cuts the answer off. The body is the transport's to read to the
	// end.
	http.NewResponseController(w).EnableFullDuplex()
	rp.ServeHTTP(w, r)
}

// errAborted is the error of a forward whose response was cut off.
var errAborted = errors.New("the response was cut off: the client or the server closed its connection")

// forwardBufSize is the copy buffer of a forwarded response body: each
// buffer is one read from upstream and one write to the client, so at net/
// http's default of 32 KiB the syscalls, not the bytes, bounded the speed.
const forwardBufSize = 256 << 10

// forwardBuffers are reused across requests: a fresh 256 KiB per request
// would be garbage the size of many small responses.
var forwardBuffers = newBufferPool(forwardBufSize)

// bufferPool holds buffers of one size (an httputil.BufferPool).
type bufferPool struct{ pool sync.Pool }

func newBufferPool(size int) *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, size); return &b }}}
}

func (b *bufferPool) Get() []byte  { return *b.pool.Get().(*[]byte) }
func (b *bufferPool) Put(s []byte) { b.pool.Put(&s) }

// forwardState carries one request's decision to its dial and the counts
// back.
type forwardState struct {
	dec  Decision
	addr netip.AddrPort
	conn *countingConn
	err  error
}

func (p *Proxy) transport(st *forwardState) *http.Transport {
	return &http.Transport{
		Proxy:                  nil, // never the supervisor's own HTTP_PROXY
		DisableKeepAlives:      true,
		ReadBufferSize:         transportReadBuffer,
		WriteBufferSize:        64 << 10,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		ResponseHeaderTimeout:  p.cfg.IdleTimeout,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, addr, err := p.dialer.DialDecision(ctx, st.dec)
			if err != nil {
				return nil, err
			}
			if !p.track(c) {
				return nil, net.ErrClosed
			}
			cc := &countingConn{Conn: c}
			st.addr, st.conn = addr, cc
			return &releasingConn{countingConn: cc, release: func() { p.release(c) }}, nil
		},
	}
}

// releasingConn untracks its connection when the transport closes it.
type releasingConn struct {
	*countingConn
	release func()
}

func (c *releasingConn) Close() error {
	c.release()
	return nil
}

// deny answers 403 with a body an agent can act on and a header a program
// can read.
func (p *Proxy) deny(w http.ResponseWriter, proto string, dec Decision) {
	p.auditDenied(proto, dec)
	w.Header().Set("X-Stockade-Denied", headerSafe(dec.Reason))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, DenialText(dec))
}

// DenialText is the explanation of a denial an agent reads: the host, the
// rule and what a human can run.
func DenialText(dec Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stockade: connection to %s denied by the sandbox's network policy.\n", dec.Target())
	fmt.Fprintf(&b, "host: %s\nreason: %s\nrule: %s\n", dec.Host, dec.Reason, dec.Rule)
	if dec.Fix != "" {
		fmt.Fprintf(&b, "To allow it, a human outside the sandbox runs:\n  %s\n", dec.Fix)
		b.WriteString("The agent cannot change this policy itself; ask the user, or do without this host.\n")
	}
	return b.String()
}

// headerSafe keeps a header value on one line of printable ASCII.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
