package egress

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/stockade-dev/stockade/internal/accept"
)

// DNS stub limits.
const (
	DNSRate  = 10 // questions a second, per Proxy, UDP and TCP together
	DNSBurst = 20
	// DNSTTL is the TTL of every answer. net.Resolver does not report the
	// upstream TTL, and a short one keeps a sandbox from caching an address
	// the supervisor would no longer choose.
	DNSTTL = 60

	dnsMaxUDP      = 1232 // the largest UDP answer, whatever EDNS offers
	dnsMinUDP      = 512
	dnsTCPIdle     = 10 * time.Second
	dnsMaxInflight = 64 // questions being resolved at once; more are dropped
)

// dnsStub answers the sandbox's DNS questions from the supervisor's own
// resolution. It never sends a question upstream: for an allowed name it
// asks the Resolver for A or AAAA records, and a denied name never leaves.
type dnsStub struct {
	p        *Proxy
	limit    *limiter
	refused  *everySecond
	inflight chan struct{}
	answered answered // which name each address was an answer for (capture)
}

func newDNSStub(p *Proxy) *dnsStub {
	return &dnsStub{
		p:        p,
		limit:    newLimiter(DNSRate, DNSBurst),
		refused:  &everySecond{now: time.Now, period: time.Second},
		inflight: make(chan struct{}, dnsMaxInflight),
	}
}

// ServeDNS answers DNS questions arriving on pc (UDP). It returns nil after
// Close.
func (p *Proxy) ServeDNS(pc net.PacketConn) error {
	if !p.addListener(pc) {
		return nil
	}
	defer p.removeListener(pc)
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if p.isClosed() {
				return nil
			}
			if accept.Temporary(err) {
				continue
			}
			return fmt.Errorf("reading DNS questions on %s: %w", pc.LocalAddr(), err)
		}
		select {
		case p.dns.inflight <- struct{}{}:
		default:
			continue // a flood: the client retries
		}
		if !p.begin() {
			return nil
		}
		q := append([]byte(nil), buf[:n]...)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.dns.inflight }()
			if resp := p.dns.answer(p.ctx, q, true); resp != nil {
				pc.WriteTo(resp, from)
			}
		}()
	}
}

// ServeDNSTCP answers DNS questions over TCP connections accepted on l.
func (p *Proxy) ServeDNSTCP(l net.Listener) error {
	return p.serve(p.capped(l, nil), p.handleDNSTCP) // DNS over TCP has no refusal: the client retries
}

func (p *Proxy) handleDNSTCP(c net.Conn) {
	for {
		c.SetDeadline(time.Now().Add(dnsTCPIdle))
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := p.dns.answer(p.ctx, q, false)
		if resp == nil {
			return // malformed: a stream cannot resynchronize
		}
		if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(resp)))); err != nil {
			return
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// answer returns the response to one query, or nil when the query is to be
// dropped (not a parsable query).
func (s *dnsStub) answer(ctx context.Context, query []byte, udp bool) []byte {
	var pr dnsmessage.Parser
	h, err := pr.Start(query)
	if err != nil || h.Response {
		return nil
	}
	q, err := pr.Question()
	if err != nil {
		return nil
	}
	resp := dnsmessage.Header{
		ID: h.ID, Response: true, OpCode: h.OpCode,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true,
	}
	if _, err := pr.Question(); err != dnsmessage.ErrSectionDone {
		resp.RCode = dnsmessage.RCodeFormatError
		return build(resp, q, nil, dnsMinUDP)
	}
	size := dnsMinUDP
	if udp {
		size = ednsSize(&pr)
	} else {
		size = 65535
	}
	if !s.limit.allow() {
		s.auditRefused()
		resp.RCode = dnsmessage.RCodeRefused
		return build(resp, q, nil, size)
	}
	if h.OpCode != 0 {
		resp.RCode = dnsmessage.RCodeNotImplemented
		return build(resp, q, nil, size)
	}
	if q.Class != dnsmessage.ClassINET {
		resp.RCode = dnsmessage.RCodeRefused
		return build(resp, q, nil, size)
	}
	dec := s.p.decider.DecideName(q.Name.String())
	if !dec.Allowed {
		f := map[string]any{"name": dec.Host, "qtype": qtypeName(q.Type), "rule": dec.Rule, "reason": dec.Reason}
		if dec.Fix != "" {
			f["fix"] = dec.Fix
		}
		s.p.cfg.Audit(EventDNSDenied, f)
		resp.RCode = dnsmessage.RCodeNameError
		return build(resp, q, nil, size)
	}
	addrs, rcode := s.resolve(ctx, dec.Host, q.Type)
	resp.RCode = rcode
	return build(resp, q, addrs, size)
}

// resolve looks up the A or AAAA records of an allowed name and keeps those
// outside the floor. Other types get an empty answer: nothing but addresses
// is asked upstream on the sandbox's behalf. A name without records of the
// type gets an empty NOERROR answer too, not NXDOMAIN: Go's resolver does
// not tell "no such name" from "no such record", and NXDOMAIN for A would
// tell a client's cache that an IPv6-only name does not exist at all.
func (s *dnsStub) resolve(ctx context.Context, name string, t dnsmessage.Type) ([]netip.Addr, dnsmessage.RCode) {
	var lookup func(context.Context, string) ([]netip.Addr, error)
	switch t {
	case dnsmessage.TypeA:
		lookup = s.p.cfg.Resolver.Lookup4
	case dnsmessage.TypeAAAA:
		lookup = s.p.cfg.Resolver.Lookup6
	default:
		return nil, dnsmessage.RCodeSuccess
	}
	addrs, err := lookup(ctx, name)
	if err != nil {
		if isNotFound(err) {
			return nil, dnsmessage.RCodeSuccess
		}
		return nil, dnsmessage.RCodeServerFailure
	}
	var out []netip.Addr
	for _, a := range s.p.decider.FilterAddrs(addrs) {
		if a = a.Unmap(); a.Is4() == (t == dnsmessage.TypeA) {
			out = append(out, a)
		}
	}
	s.answered.remember(name, out)
	return out, dnsmessage.RCodeSuccess
}

func (s *dnsStub) auditRefused() {
	ok, held := s.refused.tick()
	if !ok {
		return
	}
	s.p.cfg.Audit(EventDNSDenied, map[string]any{
		"reason":  fmt.Sprintf("rate limited (%d/s, burst %d)", DNSRate, DNSBurst),
		"dropped": held + 1,
	})
}

// ednsSize returns the UDP payload size the client accepts: its EDNS offer
// between 512 and dnsMaxUDP, 512 without EDNS.
func ednsSize(pr *dnsmessage.Parser) int {
	if pr.SkipAllQuestions() != nil || pr.SkipAllAnswers() != nil || pr.SkipAllAuthorities() != nil {
		return dnsMinUDP
	}
	for {
		h, err := pr.AdditionalHeader()
		if err != nil {
			return dnsMinUDP
		}
		if h.Type == dnsmessage.TypeOPT {
			return min(max(int(h.Class), dnsMinUDP), dnsMaxUDP)
		}
		if pr.SkipAdditional() != nil {
			return dnsMinUDP
		}
	}
}

// build packs a response. An answer larger than size is sent truncated (TC,
// no records), and the client asks again over TCP.
func build(h dnsmessage.Header, q dnsmessage.Question, addrs []netip.Addr, size int) []byte {
	msg := dnsmessage.Message{Header: h, Questions: []dnsmessage.Question{q}}
	for _, a := range addrs {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: DNSTTL}
		if a.Is4() {
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AResource{A: a.As4()}})
		} else {
			msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
		}
	}
	b, err := msg.Pack()
	if err == nil && len(b) <= size {
		return b
	}
	msg.Header.Truncated, msg.Answers = true, nil
	if b, err = msg.Pack(); err != nil {
		return nil // a question that does not pack back: drop it
	}
	return b
}

func qtypeName(t dnsmessage.Type) string {
	return t.String()
}
