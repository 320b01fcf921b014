package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ioChars returns the bytes this process has passed through read(2) and
// write(2) so far (/proc/self/io rchar, wchar): splice(2) adds none.
func ioChars(t *testing.T) (r, w int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "rchar":
			r = n
		case "wchar":
			w = n
		}
	}
	return r, w
}

// answerFixture is a proxy in front of countServer answering resp, and a
// client connection to the proxy.
func answerFixture(t *testing.T, resp []byte, idle time.Duration) (*testProxy, string, <-chan int64, net.Conn) {
	srv, got := countServer(t, resp)
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), nil)
	p.cfg.IdleTimeout = idle
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return p, srv, got, c
}

// TestForwardAnswerSpliced holds that a forwarded answer's long body is
// spliced (the supervisor's read(2) and write(2) do not carry it), arrives
// intact, is counted to the byte each way, and leaves the client's
// connection to the proxy fit for the next request.
func TestForwardAnswerSpliced(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), 200_003) // 7.2 MB
	resp := []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	p, srv, got, c := answerFixture(t, resp, DefaultIdleTimeout)
	br := bufio.NewReader(c)
	var sent []int64
	for i := range 2 {
		r0, w0 := ioChars(t)
		fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\nHost: %s\r\n\r\n", srv, i, srv)
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(b, body) {
			t.Fatalf("request %d: %d bytes, %v; want the %d bytes sent", i, len(b), err, len(body))
		}
		sent = append(sent, <-got)
		// The server wrote the body once and the client read it once;
		// a copy in the proxy would read and write it once more.
		if r1, w1 := ioChars(t); r1-r0 > int64(len(body))*3/2 || w1-w0 > int64(len(body))*3/2 {
			t.Errorf("request %d: read(2) carried %d bytes, write(2) %d, for a body of %d: the answer was copied, not spliced",
				i, r1-r0, w1-w0, len(body))
		}
	}
	c.Close()
	p.Close()
	ev := p.audit.find(EventConnection)
	if len(ev) != 2 {
		t.Fatalf("%d connection events, want 2: %v", len(ev), ev)
	}
	for i, e := range ev {
		if e.fields["bytes_in"] != int64(len(resp)) || e.fields["bytes_out"] != sent[i] || e.fields["error"] != nil {
			t.Errorf("event %v: want bytes_in %d (what the server wrote), bytes_out %d (what it read), no error", e.fields, len(resp), sent[i])
		}
	}
}

// TestForwardAnswerCut holds that an answer whose server closes before the
// length it announced reaches the client cut short, not padded or hung,
// and is audited with what crossed and the error.
func TestForwardAnswerCut(t *testing.T) {
	resp := []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", 6<<20, bytes.Repeat([]byte("x"), 3<<20)))
	p, srv, got, c := answerFixture(t, resp, DefaultIdleTimeout)
	fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", srv, srv)
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r.Body)
	if err == nil || n != 3<<20 {
		t.Errorf("body: %d bytes, %v; want the 3 MiB sent and an error", n, err)
	}
	<-got
	c.Close()
	p.Close()
	ev := p.audit.find(EventConnection)
	if len(ev) != 1 || ev[0].fields["bytes_in"] != int64(len(resp)) || ev[0].fields["error"] == nil {
		t.Errorf("connection events %v: want one with bytes_in %d and an error", ev, len(resp))
	}
}

// TestForwardAnswerIdle holds that a spliced answer whose server goes
// silent mid-body ends after the idle time.
func TestForwardAnswerIdle(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stall := make(chan struct{})
	defer close(stall)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", 8<<20, bytes.Repeat([]byte("x"), 2<<20))
		<-stall
	}()
	const idle = 300 * time.Millisecond
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), nil)
	p.cfg.IdleTimeout = idle
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", l.Addr(), l.Addr())
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := io.Copy(io.Discard, r.Body)
	if err == nil || isTimeout(err) || n != 2<<20 {
		t.Errorf("body: %d bytes, %v after %v; want 2 MiB, then the proxy's close", n, err, time.Since(start))
	}
}
