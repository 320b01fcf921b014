package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// countServer accepts one connection at a time on 127.0.0.1: it reads a
// request head (and a body of the Content-Length it names), answers with
// resp, closes, and sends the number of bytes it read on got.
func countServer(t *testing.T, resp []byte) (string, <-chan int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got := make(chan int64, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cr := &countingConn{Conn: c}
			req, err := http.ReadRequest(bufio.NewReaderSize(cr, 1)) // unbuffered: reads no byte past the body
			if err == nil {
				io.Copy(io.Discard, req.Body)
				c.Write(resp)
			}
			c.Close()
			got <- cr.read.Load()
		}
	}()
	return l.Addr().String(), got
}

// TestConnectionBytesExact holds that the connection event counts exactly
// the bytes that crossed the upstream connection, each way, for a CONNECT
// tunnel (spliced) and for a forwarded plain-HTTP request, uploads and
// downloads larger than any buffer. A forward once reported 0 bytes out.
func TestConnectionBytesExact(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB, not a power of two
	resp := []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	for _, tt := range []struct {
		name, proto string
		upload      int
	}{
		{"connect download", "connect", 0},
		{"connect upload", "connect", 3_000_001},
		{"forward download", "http", 0},
		{"forward upload", "http", 3_000_001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := countServer(t, resp)
			p := newTestProxy(t, mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), nil)
			addr := listen(t, p.Proxy, p.ServeHTTPProxy)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			target := "/"
			if tt.proto == "connect" {
				fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", srv, srv)
				r, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
				if err != nil || r.StatusCode != 200 {
					t.Fatalf("CONNECT: %v %v", r, err)
				}
			} else {
				target = "http://" + srv + "/"
			}
			up := strings.Repeat("u", tt.upload)
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", target, srv, len(up), up)
			r, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil || n != int64(len(body)) {
				t.Fatalf("body: %d bytes, %v; want %d", n, err, len(body))
			}
			c.Close()
			sent := <-got
			p.Close() // waits for the handlers, which audit before they return
			ev := p.audit.find(EventConnection)
			if len(ev) != 1 {
				t.Fatalf("%d connection events, want 1: %v", len(ev), ev)
			}
			f := ev[0].fields
			if f["proto"] != tt.proto || f["bytes_out"] != sent || f["bytes_in"] != int64(len(resp)) {
				t.Errorf("event %v: want proto %s, bytes_out %d (what the server read), bytes_in %d (what it wrote)",
					f, tt.proto, sent, len(resp))
			}
		})
	}
}

// lateConn is an upstream connection whose Write, once its bytes are sent,
// returns only when the connection is closed: the transport's write
// goroutine, descheduled after its write, while the response is relayed.
type lateConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *lateConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	<-c.closed
	return n, err
}

func (c *lateConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestForwardCountsLateWrite holds that a forward is audited with the bytes
// it sent even when the request's write returns after the response has been
// relayed (issue: a plain-HTTP forward logged with 0 bytes out).
func TestForwardCountsLateWrite(t *testing.T) {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	srv, got := countServer(t, resp)
	a := &auditLog{}
	var d net.Dialer
	p := New(Config{Session: "s1", Rules: mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), Audit: a.record,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &lateConn{Conn: c, closed: make(chan struct{})}, nil
		}})
	addr := listen(t, p, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", srv, srv)
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	c.Close()
	sent := <-got
	p.Close()
	ev := a.find(EventConnection)
	if len(ev) != 1 || ev[0].fields["bytes_out"] != sent || sent == 0 || ev[0].fields["bytes_in"] != int64(len(resp)) {
		t.Errorf("connection events %v, want one with bytes_out %d, bytes_in %d", ev, sent, len(resp))
	}
}

// TestTunnelIdle holds the idle rule of a spliced tunnel: a download with a
// silent client stays open for longer than the idle time, and a tunnel with
// no byte either way for that long is closed.
func TestTunnelIdle(t *testing.T) {
	const idle = 200 * time.Millisecond
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tick := time.NewTicker(idle / 4)
		defer tick.Stop()
		for range 12 { // 3 idle periods of a trickle
			<-tick.C
			c.Write([]byte{'x'})
		}
		io.Copy(io.Discard, c) // then silence until the proxy closes
	}()
	a := &auditLog{}
	p := New(Config{Session: "s1", Rules: mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), Audit: a.record, IdleTimeout: idle})
	addr := listen(t, p, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", l.Addr())
	br := bufio.NewReader(c)
	if r, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || r.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", r, err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(br)
	if string(got) != strings.Repeat("x", 12) || err != nil {
		t.Fatalf("read %q, %v; want 12 bytes, then the tunnel closed as idle", got, err)
	}
	p.Close()
	ev := a.find(EventConnection)
	if len(ev) != 1 || ev[0].fields["error"] != "idle for 200ms" || ev[0].fields["bytes_in"] != int64(12) {
		t.Errorf("connection events %v, want one with 12 bytes in, ended as idle", ev)
	}
}

// TestTunnelHalfClose: through a spliced tunnel, the client's end of input
// reaches the server as EOF while the server's answer still flows back in
// full, and the counts match both ways.
func TestTunnelHalfClose(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const up, down = 3_000_017, 5_000_011
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c) // until the client's half-close
		fmt.Fprintf(c, "%d\n", n)
		c.Write(bytes.Repeat([]byte{'d'}, down))
	}()
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), nil)
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", l.Addr())
	br := bufio.NewReader(c)
	if r, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || r.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", r, err)
	}
	if _, err := c.Write(bytes.Repeat([]byte{'u'}, up)); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	line, err := br.ReadString('\n')
	if err != nil || line != fmt.Sprintf("%d\n", up) {
		t.Fatalf("the server read %q (%v), want %d", line, err, up)
	}
	n, err := io.Copy(io.Discard, br)
	if err != nil || n != down {
		t.Fatalf("read %d bytes back (%v), want %d", n, err, down)
	}
	c.Close()
	p.Close()
	ev := p.audit.find(EventConnection)
	if len(ev) != 1 || ev[0].fields["bytes_out"] != int64(up) || ev[0].fields["bytes_in"] != int64(down+len(line)) || ev[0].fields["error"] != nil {
		t.Errorf("connection events %v, want one with %d out, %d in, no error", ev, up, down+len(line))
	}
}

// TestForwardAbortedAudited holds that a forward whose client goes away
// while the response is relayed is still audited, with the bytes it sent
// upstream: net/http's reverse proxy ends such a handler by panicking, and
// an agent could otherwise upload to an allowed host, drop the connection
// before the answer, and leave no connection event.
func TestForwardAbortedAudited(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1_000_000) // 16 MB: more than the sockets hold
	resp := []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	srv, got := countServer(t, resp)
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), nil)
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	up := strings.Repeat("u", 3_000_001)
	fmt.Fprintf(c, "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", srv, srv, len(up), up)
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	tcpConn(c).SetLinger(0) // a reset: the proxy's next write fails at once
	c.Close()
	sent := <-got
	p.Close()
	ev := p.audit.find(EventConnection)
	if len(ev) != 1 {
		t.Fatalf("%d connection events, want 1: %v", len(ev), ev)
	}
	f := ev[0].fields
	if f["proto"] != "http" || f["bytes_out"] != sent || f["error"] == nil {
		t.Errorf("event %v: want proto http, bytes_out %d (what the server read), an error", f, sent)
	}
	if in, _ := f["bytes_in"].(int64); in < 1<<20 || in > int64(len(resp)) {
		t.Errorf("bytes_in %v: want at least what the client read (%d), at most what the server wrote (%d)", f["bytes_in"], 1<<20, len(resp))
	}
}
