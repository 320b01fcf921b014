package egress

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func dnsQuery(t testing.TB, name string, qt dnsmessage.Type) []byte {
	t.Helper()
	msg := dnsmessage.Message{
		Header: dnsmessage.Header{ID: 0x1234, RecursionDesired: true},
		Questions: []dnsmessage.Question{{
			Name: dnsmessage.MustNewName(name), Type: qt, Class: dnsmessage.ClassINET,
		}},
	}
	b, err := msg.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exchangeUDP sends one query to the stub and parses the answer.
func exchangeUDP(t *testing.T, addr string, q []byte) dnsmessage.Message {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	var m dnsmessage.Message
	if err := m.Unpack(buf[:n]); err != nil {
		t.Fatal(err)
	}
	return m
}

func answerAddrs(m dnsmessage.Message) []string {
	var out []string
	for _, a := range m.Answers {
		switch b := a.Body.(type) {
		case *dnsmessage.AResource:
			out = append(out, netip.AddrFrom4(b.A).String())
		case *dnsmessage.AAAAResource:
			out = append(out, netip.AddrFrom16(b.AAAA).String())
		}
	}
	return out
}

func startDNSProxy(t *testing.T, rules *Rules) (*testProxy, string) {
	t.Helper()
	p := newTestProxy(t, rules, map[string][]string{
		"allowed.test.": {"203.0.113.10", "10.0.0.5", "2001:db8::10", "fd00::1"},
		"denied.test.":  {"203.0.113.11"},
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- p.ServeDNS(pc) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
	return p, pc.LocalAddr().String()
}

func TestDNSStub(t *testing.T) {
	p, addr := startDNSProxy(t, mustRules(t, ModeDeny, []string{"allowed.test"}, nil))
	tests := []struct {
		name  string
		qtype dnsmessage.Type
		rcode dnsmessage.RCode
		addrs []string
	}{
		{"allowed.test.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"203.0.113.10"}},
		{"ALLOWED.test.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, []string{"2001:db8::10"}},
		{"allowed.test.", dnsmessage.TypeTXT, dnsmessage.RCodeSuccess, nil},
		{"allowed.test.", dnsmessage.TypeMX, dnsmessage.RCodeSuccess, nil},
		{"denied.test.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"denied.test.", dnsmessage.TypeTXT, dnsmessage.RCodeNameError, nil},
		{"exfil-6c6f6c.denied.test.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
	}
	for _, tt := range tests {
		m := exchangeUDP(t, addr, dnsQuery(t, tt.name, tt.qtype))
		got := answerAddrs(m)
		if m.Header.ID != 0x1234 || !m.Header.Response || m.Header.RCode != tt.rcode || len(got) != len(tt.addrs) {
			t.Errorf("%s %v: %v %v, want %v %v", tt.name, tt.qtype, m.Header.RCode, got, tt.rcode, tt.addrs)
			continue
		}
		for i := range got {
			if got[i] != tt.addrs[i] {
				t.Errorf("%s %v: answers %v, want %v", tt.name, tt.qtype, got, tt.addrs)
			}
		}
		for _, a := range m.Answers {
			if a.Header.TTL > DNSTTL {
				t.Errorf("TTL %d above the cap", a.Header.TTL)
			}
		}
	}
	for _, name := range []string{"denied.test", "exfil-6c6f6c.denied.test"} {
		if p.dns.wasAsked(name) {
			t.Errorf("the upstream was asked about the denied name %s", name)
		}
	}
	if p.dns.wasAsked("allowed.test") == false {
		t.Error("the upstream was never asked about allowed.test")
	}
	if n := len(p.audit.find(EventDNSDenied)); n != 3 {
		t.Errorf("%d dns_denied events, want 3", n)
	}
}

func TestDNSRateLimit(t *testing.T) {
	p, addr := startDNSProxy(t, mustRules(t, ModeDeny, nil, nil))
	// A fixed clock: no token comes back. Atomic, because the race
	// detector does not see the UDP round trip as synchronization.
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	l := p.Proxy.dns.limit
	l.mu.Lock() // the stub reads now under mu
	l.now = func() time.Time { return time.Unix(0, now.Load()) }
	l.mu.Unlock()
	for i := range DNSBurst + 5 {
		m := exchangeUDP(t, addr, dnsQuery(t, "denied.test.", dnsmessage.TypeA))
		want := dnsmessage.RCodeNameError
		if i >= DNSBurst {
			want = dnsmessage.RCodeRefused
		}
		if m.Header.RCode != want {
			t.Fatalf("query %d: %v, want %v", i, m.Header.RCode, want)
		}
	}
	var limited int
	for _, e := range p.audit.find(EventDNSDenied) {
		if e.fields["dropped"] != nil {
			limited++
		}
	}
	if limited != 1 {
		t.Errorf("%d rate-limit events for 5 refused queries in one second, want 1", limited)
	}
	now.Add(int64(time.Second)) // 10 tokens back
	if m := exchangeUDP(t, addr, dnsQuery(t, "denied.test.", dnsmessage.TypeA)); m.Header.RCode != dnsmessage.RCodeNameError {
		t.Errorf("after a second: %v, want NXDOMAIN", m.Header.RCode)
	}
}

func TestDNSMalformed(t *testing.T) {
	p := New(Config{Rules: mustRules(t, ModeAllow, nil, nil)})
	defer p.Close()
	good := dnsQuery(t, "a.test.", dnsmessage.TypeA)
	resp := append([]byte(nil), good...)
	resp[2] |= 0x80 // QR: a response, not a query
	for _, q := range [][]byte{nil, {1}, good[:12], good[:len(good)-1], resp} {
		if out := p.dns.answer(p.ctx, q, true); out != nil {
			t.Errorf("answer(%x) = %x, want it dropped", q, out)
		}
	}
}

func TestDNSTCP(t *testing.T) {
	p := newTestProxy(t, mustRules(t, ModeDeny, []string{"allowed.test"}, nil),
		map[string][]string{"allowed.test.": {"203.0.113.10"}})
	addr := listen(t, p.Proxy, p.ServeDNSTCP)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for _, tt := range []struct {
		name  string
		rcode dnsmessage.RCode
	}{{"allowed.test.", dnsmessage.RCodeSuccess}, {"denied.test.", dnsmessage.RCodeNameError}} {
		q := dnsQuery(t, tt.name, dnsmessage.TypeA)
		c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(q))))
		c.Write(q)
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(b); err != nil {
			t.Fatal(err)
		}
		if m.Header.RCode != tt.rcode {
			t.Errorf("%s over TCP: %v, want %v", tt.name, m.Header.RCode, tt.rcode)
		}
	}
}
