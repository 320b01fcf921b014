package egress

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is an upstream DNS server on 127.0.0.1 that answers from a table
// and remembers every name it was asked.
type fakeDNS struct {
	pc      net.PacketConn
	records map[string][]netip.Addr // lower-case name with trailing dot
	mu      sync.Mutex
	asked   []string
}

func startFakeDNS(t *testing.T, records map[string][]string) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDNS{pc: pc, records: map[string][]netip.Addr{}}
	for name, addrs := range records {
		for _, a := range addrs {
			f.records[name] = append(f.records[name], netip.MustParseAddr(a))
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := f.answer(buf[:n]); resp != nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return f
}

func (f *fakeDNS) answer(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil
	}
	question, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(question.Name.String())
	f.mu.Lock()
	f.asked = append(f.asked, name)
	f.mu.Unlock()
	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: h.ID, Response: true, RecursionAvailable: true},
		Questions: []dnsmessage.Question{question},
	}
	addrs, ok := f.records[name]
	if !ok {
		msg.Header.RCode = dnsmessage.RCodeNameError
	}
	for _, a := range addrs {
		rh := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 3600}
		switch {
		case a.Is4() && question.Type == dnsmessage.TypeA:
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AResource{A: a.As4()}})
		case a.Is6() && question.Type == dnsmessage.TypeAAAA:
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
		}
	}
	b, _ := msg.Pack()
	return b
}

// wasAsked reports whether any question named name (any type).
func (f *fakeDNS) wasAsked(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.asked {
		if strings.TrimSuffix(n, ".") == strings.TrimSuffix(name, ".") {
			return true
		}
	}
	return false
}

func (f *fakeDNS) resolver(t *testing.T) *Resolver {
	t.Helper()
	r, err := NewResolver(f.pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// auditLog collects audit events.
type auditLog struct {
	mu     sync.Mutex
	events []auditEvent
}

type auditEvent struct {
	name   string
	fields map[string]any
}

func (a *auditLog) record(name string, f map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, auditEvent{name, f})
}

func (a *auditLog) find(name string) []auditEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []auditEvent
	for _, e := range a.events {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// testProxy is a Proxy with a fake upstream DNS and collected audit events.
type testProxy struct {
	*Proxy
	dns   *fakeDNS
	audit *auditLog
}

func newTestProxy(t *testing.T, rules *Rules, records map[string][]string) *testProxy {
	t.Helper()
	f := startFakeDNS(t, records)
	a := &auditLog{}
	p := New(Config{Session: "s1", Rules: rules, Resolver: f.resolver(t), Audit: a.record})
	t.Cleanup(func() { p.Close() })
	return &testProxy{Proxy: p, dns: f, audit: a}
}

// listen serves one of the proxy's endpoints on 127.0.0.1 and returns its
// address; the proxy is closed when the test ends.
func listen(t *testing.T, p *Proxy, serve func(net.Listener) error) string {
	t.Helper()
	addr, stop := serveOn(t, serve)
	t.Cleanup(func() { p.Close(); stop() })
	return addr
}

// serveOn runs serve on a new 127.0.0.1 listener. stop waits for serve to
// return (after the proxy's Close) and reports its error.
func serveOn(t *testing.T, serve func(net.Listener) error) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- serve(l) }()
	return l.Addr().String(), func() {
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}

// startEcho runs a TCP echo server on 127.0.0.1 until the test ends.
func startEcho(t *testing.T) string {
	t.Helper()
	addr, stop := echoServer(t)
	t.Cleanup(stop)
	return addr
}

// echoServer runs a TCP echo server on 127.0.0.1; stop closes it and every
// connection it has, and waits for its goroutines.
func echoServer(t *testing.T) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Plain reads and writes: io.Copy between TCP
				// connections splices through pooled pipes that only
				// the garbage collector closes, which would spoil the
				// descriptor count of TestManyTunnels.
				io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
		}
	}()
	return l.Addr().String(), func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

func mustRules(t testing.TB, mode Mode, allow, block []string) *Rules {
	t.Helper()
	parse := func(list []string) []Rule {
		var out []Rule
		for _, s := range list {
			r, err := ParseRule(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	return NewRules(mode, parse(allow), parse(block))
}
