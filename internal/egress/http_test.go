package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// connect sends CONNECT target through the proxy and returns the response
// and the connection (a tunnel on 200).
func connect(t testing.TB, proxy, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	resp, c, br, err := dialConnect(proxy, target)
	if err != nil {
		t.Fatal(err)
	}
	return resp, c, br
}

func dialConnect(proxy, target string) (*http.Response, net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		return nil, nil, nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, nil, nil, fmt.Errorf("CONNECT %s: %w", target, err)
	}
	return resp, c, br, nil
}

func TestHTTPConnect(t *testing.T) {
	echo := startEcho(t)
	_, port, _ := net.SplitHostPort(echo)
	tests := []struct {
		name   string
		allow  []string
		target string
		status int
		body   []string // parts of the 403 body
	}{
		{"loopback refused by the floor", nil, echo, 403,
			[]string{"127.0.0.1", "loopback", "stockade network agent allow -s s1 127.0.0.1"}},
		{"explicit ip rule", []string{"127.0.0.1"}, echo, 200, nil},
		{"name allowed, private answer", []string{"echo.test"}, "echo.test:" + port, 403,
			[]string{"echo.test", "resolves to 127.0.0.1, a loopback address", "rule: floor"}},
		{"name and ip rule", []string{"echo.test", "127.0.0.1"}, "echo.test:" + port, 200, nil},
		{"not in the allowlist", []string{"127.0.0.1"}, "other.test:" + port, 403,
			[]string{"other.test", "not in the allowlist (deny mode)", "stockade network agent allow -s s1 other.test"}},
		{"unresolvable", []string{"nx.test"}, "nx.test:443", 502, nil},
		{"no port", []string{"127.0.0.1"}, "127.0.0.1", 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProxy(t, mustRules(t, ModeDeny, tt.allow, nil), map[string][]string{"echo.test.": {"127.0.0.1"}})
			addr := listen(t, p.Proxy, p.ServeHTTPProxy)
			resp, c, br := connect(t, addr, tt.target)
			defer c.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 403 {
				body, _ := io.ReadAll(resp.Body)
				for _, want := range tt.body {
					if !strings.Contains(string(body), want) {
						t.Errorf("403 body lacks %q:\n%s", want, body)
					}
				}
				if resp.Header.Get("X-Stockade-Denied") == "" {
					t.Error("no X-Stockade-Denied header")
				}
				if len(p.audit.find(EventNetworkDenied)) != 1 {
					t.Error("no network_denied event")
				}
			}
			if tt.status != 200 {
				return
			}
			fmt.Fprint(c, "hello")
			buf := make([]byte, 5)
			if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("echo through the tunnel: %q, %v", buf, err)
			}
			c.Close()
			p.Close()
			ev := p.audit.find(EventConnection)
			if len(ev) != 1 || ev[0].fields["bytes_out"] != int64(5) || ev[0].fields["bytes_in"] != int64(5) {
				t.Errorf("connection events %v, want one with 5 bytes each way", ev)
			}
		})
	}
}

func TestHTTPForward(t *testing.T) {
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		fmt.Fprintf(w, "hello %s %s", r.Host, r.URL.Path)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"web.test", "private.test", "127.0.0.1"}, nil),
		map[string][]string{"web.test.": {"127.0.0.1"}, "private.test.": {"10.0.0.5"}})
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	proxyURL, _ := url.Parse("http://" + addr)
	var dials int
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), DialContext: (&countingDialer{n: &dials}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	for i, target := range []string{"http://web.test:" + port + "/a", "http://127.0.0.1:" + port + "/b"} {
		req, _ := http.NewRequest("GET", target, nil)
		req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
		req.Header.Set("Proxy-Foo", "x")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello ") {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if seen.Get("Proxy-Authorization") != "" || seen.Get("Proxy-Foo") != "" {
			t.Errorf("Proxy-* headers reached the server: %v", seen)
		}
	}
	if dials != 1 {
		t.Errorf("%d connections to the proxy for two requests, want 1 (keep-alive)", dials)
	}
	for _, tt := range []struct {
		target string
		status int
		part   string
	}{
		{"http://denied.test/", 403, "stockade network agent allow -s s1 denied.test"},
		{"http://private.test/", 403, "resolves to 10.0.0.5, a private address"},
	} {
		resp, err := client.Get(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.part) {
			t.Errorf("%s: %d %q, want %d with %q", tt.target, resp.StatusCode, body, tt.status, tt.part)
		}
	}
}

type countingDialer struct{ n *int }

func (d *countingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	*d.n++
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func TestHTTPOriginForm(t *testing.T) {
	p := newTestProxy(t, nil, nil)
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "this is an HTTP proxy") {
		t.Errorf("origin-form: %d %q, want 400 explaining the proxy", resp.StatusCode, body)
	}
}

// TestForwardFullDuplex holds that a forward keeps sending the request's
// body after the answer has begun: a server may answer before it has read
// the body (and go on once it has), and a client may send the rest only
// once it sees the answer. In net/http's default half-duplex mode the
// proxy's server took the rest of the body for itself when the answer
// started: here it waits for a body that comes only after the answer; with
// a body sent at once, it closed the body under the transport, which closed
// the upstream connection and cut the answer off (a plain-HTTP POST through
// the proxy was cut short a few times in a hundred).
func TestForwardFullDuplex(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const first, rest = "first half;", "second half, after the whole body"
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		// No length: the proxy passes each piece on at once.
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n%s", first)
		if b, err := io.ReadAll(req.Body); err != nil || string(b) != "abcdefghij" {
			return // the answer stays short: the test fails
		}
		io.WriteString(c, rest)
	}()
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), nil)
	addr := listen(t, p.Proxy, p.ServeHTTPProxy)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "POST http://%s/ HTTP/1.1\r\nHost: %[1]s\r\nContent-Length: 10\r\n\r\nabc", l.Addr())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != first {
		t.Fatalf("the start of the answer: %q, %v", got, err)
	}
	io.WriteString(c, "defghij") // the rest of the body, once the answer has begun
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != rest {
		t.Fatalf("the rest of the answer: %q, %v; want %q", b, err, rest)
	}
}
