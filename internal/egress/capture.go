package egress

import (
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// ServeCapture serves the capture listener: connections the sandbox's
// nftables rules redirected there (package capture), whatever the program
// did with the proxy variables. Each is decided like a proxied one, by the
// name it carries (the server_name of a TLS ClientHello, the Host of a
// plain HTTP request), else the name the DNS stub answered its address
// for, else its address; then the checked address is dialed and the bytes
// spliced. It returns nil after Close.
func (p *Proxy) ServeCapture(l net.Listener) error {
	return p.serve(p.capped(l, nil), p.handleCapture)
}

// protoCapture is the proto of a captured connection's audit events.
const protoCapture = "capture"

func (p *Proxy) handleCapture(c net.Conn) {
	start := time.Now()
	dst, err := originalDst(c)
	if err != nil {
		p.auditDenied(protoCapture, Decision{Host: c.LocalAddr().String(), Rule: "invalid", Reason: err.Error()})
		reset(c)
		return
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	prefix, name, kind := sniff(c)
	ctx, cancel := context.WithTimeout(p.ctx, handshakeTimeout)
	defer cancel()
	dec, from := p.decideCaptured(ctx, dst, name, kind)
	// What the audit log adds for a captured connection: where the
	// program was going, and what named it.
	extra := map[string]any{"dst": dst.String(), "name_from": from}
	if !dec.Allowed {
		if dec.Unresolved {
			p.auditConn(protoCapture, dec, netip.AddrPort{}, 0, 0, start, dec.Err, extra)
		} else {
			p.auditDenied(protoCapture, dec, extra)
		}
		if kind == sniffHTTP {
			denyRaw(c, dec)
			return
		}
		reset(c)
		return
	}
	up, addr, err := p.dialer.DialDecision(ctx, dec)
	if err != nil {
		p.auditConn(protoCapture, dec, addr, 0, 0, start, err, extra)
		reset(c)
		return
	}
	if !p.track(up) {
		return
	}
	defer p.release(up)
	if len(prefix) > 0 {
		up.SetWriteDeadline(time.Now().Add(handshakeTimeout))
		if _, err := up.Write(prefix); err != nil {
			p.auditConn(protoCapture, dec, addr, 0, 0, start, err, extra)
			return
		}
	}
	c.SetDeadline(time.Time{})
	up.SetDeadline(time.Time{})
	out, in, err := splice(c, up, p.cfg.IdleTimeout)
	p.auditConn(protoCapture, dec, addr, in, out+int64(len(prefix)), start, err, extra)
}

// decideCaptured decides a connection to dst that carried name ("" when
// it named none). A name the client sent is decided and resolved as a
// proxy's CONNECT would be, and its checked addresses are dialed, dst first
// when it is one of them: the address the program chose never lets a
// permitted name reach another host. Without one, the name the DNS stub
// answered dst for decides, and dst alone is dialed; without that, dst is
// an IP literal.
//
// from says what named the destination: kind (the sniffed protocol), "dns"
// or "address".
func (p *Proxy) decideCaptured(ctx context.Context, dst netip.AddrPort, name, kind string) (dec Decision, from string) {
	if name != "" {
		dec := p.decider.Decide(ctx, name, dst.Port())
		if i := slices.Index(dec.Addrs, dst.Addr()); i > 0 {
			dec.Addrs = append([]netip.Addr{dst.Addr()}, slices.Delete(slices.Clone(dec.Addrs), i, i+1)...)
		}
		return dec, kind
	}
	if n := p.dns.answered.name(dst.Addr()); n != "" {
		return p.decider.DecideAt(n, dst), "dns"
	}
	return p.decider.Decide(ctx, dst.Addr().String(), dst.Port()), "address"
}

// denyRaw answers a captured plain HTTP request that was denied as the
// HTTP proxy would: 403 and the explanation.
func denyRaw(c net.Conn, dec Decision) {
	body := DenialText(dec)
	c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	io.WriteString(c, "HTTP/1.1 403 Forbidden\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n"+
		"X-Stockade-Denied: "+headerSafe(dec.Reason)+"\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
}

// reset closes c with a RST: the client sees "connection reset" at once,
// not a server that accepted and went quiet.
func reset(c net.Conn) {
	if tc := tcpConn(c); tc != nil {
		tc.SetLinger(0)
	}
	c.Close()
}
