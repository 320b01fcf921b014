package authproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is what an upstream received.
type seen struct {
	Method, Path, RawPath, Query, Host string
	Header                             http.Header
	Body                               string
}

// upstream is an httptest server on 127.0.0.1 that records every request
// and answers with handle (or 200 "ok").
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func startUpstream(t testing.TB, handle http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Host, r.Header.Clone(), string(body)})
		u.mu.Unlock()
		if handle != nil {
			handle(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream got no request")
	}
	return u.reqs[len(u.reqs)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

// auditLog records audit events.
type auditLog struct {
	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed and replaced at each event
}

type event struct {
	name   string
	fields map[string]any
}

func (a *auditLog) record(name string, f map[string]any) {
	a.mu.Lock()
	a.events = append(a.events, event{name, f})
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
	a.mu.Unlock()
}

// waitFor waits until there are n events and returns them: the proxy
// records an auth_request after the agent may have read the whole answer.
func (a *auditLog) waitFor(t testing.TB, n int) []event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		a.mu.Lock()
		if len(a.events) >= n {
			defer a.mu.Unlock()
			return append([]event(nil), a.events...)
		}
		if a.changed == nil {
			a.changed = make(chan struct{})
		}
		ch := a.changed
		a.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("%d audit events after 10 s, want %d", len(a.all()), n)
		}
	}
}

func (a *auditLog) all() []event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]event(nil), a.events...)
}

// keyOf is the fake real key of a route in tests.
func keyOf(route string) string { return "real-" + route + "-K3Y-0123456789" }

// allRoutes returns a route for every provider, all to up, each with its
// table style and its upstream's base path kept.
func allRoutes(t testing.TB, up *upstream) map[string]Route {
	t.Helper()
	routes := map[string]Route{}
	for _, p := range Providers() {
		def, _ := url.Parse(p.Upstream)
		u, _ := url.Parse(up.URL + def.Path)
		routes[p.Name] = Route{Upstream: u, Key: keyOf(p.Name), Style: p.Style}
	}
	return routes
}

// testProxy is a Proxy served on 127.0.0.1.
type testProxy struct {
	*Proxy
	base  string // http://127.0.0.1:PORT
	addr  string
	audit *auditLog
}

func startProxy(t testing.TB, routes map[string]Route, edit func(*Config)) *testProxy {
	t.Helper()
	a := &auditLog{}
	cfg := Config{Routes: routes, Audit: a.record, AllowHTTP: map[string]bool{}}
	for name := range routes {
		cfg.AllowHTTP[name] = true // the httptest upstreams are plain http
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testProxy{Proxy: p, base: "http://" + ln.Addr().String(), addr: ln.Addr().String(), audit: a}
}

// do sends a request with headers h and returns the response with its
// body read.
func do(t testing.TB, c *http.Client, method, url string, h http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// raw sends a request as written (CONNECT, absolute-form, dot segments,
// any Host) and returns the response with its body.
func raw(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", request, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return v
}
