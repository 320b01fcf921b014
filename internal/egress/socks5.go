package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// SOCKS5 protocol values (RFC 1928).
const (
	socksVersion    = 0x05
	socksNoAuth     = 0x00
	socksNoMethod   = 0xff // no acceptable method
	socksCmdConnect = 0x01
	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04
)

// SOCKS5 reply codes.
const (
	repSucceeded       = 0x00
	repGeneralFailure  = 0x01
	repNotAllowed      = 0x02 // connection not allowed by ruleset
	repNetUnreachable  = 0x03
	repHostUnreachable = 0x04
	repRefused         = 0x05
	repCmdNotSupported = 0x07
	repAtypUnsupported = 0x08
)

// socksError is a request the server refuses. reply is the code to send
// before closing; a malformed request (bad version, reserved byte, empty
// name, port 0) has no reply: the connection is closed without one.
type socksError struct {
	reply byte
	msg   string
}

func (e *socksError) Error() string { return "SOCKS5 request: " + e.msg }

func closeWith(msg string) error { return &socksError{msg: msg} }

// socksRequest is a parsed CONNECT request.
type socksRequest struct {
	host string // a name, or an address in its text form
	port uint16
}

// readGreeting reads the version/methods message and reports whether the
// client offers "no authentication", the only method served.
func readGreeting(r io.Reader) (bool, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, fmt.Errorf("reading SOCKS5 greeting: %w", err)
	}
	if h[0] != socksVersion {
		return false, closeWith(fmt.Sprintf("version %d, want 5", h[0]))
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, fmt.Errorf("reading SOCKS5 methods: %w", err)
	}
	for _, m := range methods {
		if m == socksNoAuth {
			return true, nil
		}
	}
	return false, nil
}

// readRequest reads a request: VER CMD RSV ATYP DST.ADDR DST.PORT.
func readRequest(r io.Reader) (socksRequest, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return socksRequest{}, fmt.Errorf("reading SOCKS5 request: %w", err)
	}
	switch {
	case h[0] != socksVersion:
		return socksRequest{}, closeWith(fmt.Sprintf("version %d, want 5", h[0]))
	case h[2] != 0:
		return socksRequest{}, closeWith("reserved byte is not 0")
	case h[1] != socksCmdConnect:
		return socksRequest{}, &socksError{repCmdNotSupported, fmt.Sprintf("command %d: only CONNECT is served", h[1])}
	}
	var req socksRequest
	switch h[3] {
	case socksAtypIPv4, socksAtypIPv6:
		b := make([]byte, 4)
		if h[3] == socksAtypIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return socksRequest{}, fmt.Errorf("reading SOCKS5 address: %w", err)
		}
		a, _ := netip.AddrFromSlice(b)
		req.host = a.String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return socksRequest{}, fmt.Errorf("reading SOCKS5 name length: %w", err)
		}
		if n[0] == 0 {
			return socksRequest{}, closeWith("empty name")
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return socksRequest{}, fmt.Errorf("reading SOCKS5 name: %w", err)
		}
		req.host = string(b)
	default:
		return socksRequest{}, &socksError{repAtypUnsupported, fmt.Sprintf("address type %d", h[3])}
	}
	var port [2]byte
	if _, err := io.ReadFull(r, port[:]); err != nil {
		return socksRequest{}, fmt.Errorf("reading SOCKS5 port: %w", err)
	}
	req.port = binary.BigEndian.Uint16(port[:])
	if req.port == 0 {
		return socksRequest{}, closeWith("port 0")
	}
	return req, nil
}

// socksReply is a reply with BND.ADDR 0.0.0.0:0: the supervisor's own
// address on the host is none of the sandbox's business.
func socksReply(code byte) []byte {
	return []byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
}

// dialReply maps a dial error to a reply code.
func dialReply(err error) byte {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return repRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return repNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), isTimeout(err):
		return repHostUnreachable
	}
	return repGeneralFailure
}

// ServeSOCKS5 serves a SOCKS5 proxy on l (no authentication, CONNECT only).
// It returns nil after Close.
func (p *Proxy) ServeSOCKS5(l net.Listener) error {
	return p.serve(p.capped(l, refuseSOCKS5), p.handleSOCKS5)
}

// refuseSOCKS5 answers a client over the cap: SOCKS5 has no text, so the
// request gets "general failure" (the ruleset's "not allowed" is for
// denials).
func refuseSOCKS5(c net.Conn) {
	if _, err := readGreeting(c); err != nil {
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	if _, err := readRequest(c); err != nil {
		return
	}
	c.Write(socksReply(repGeneralFailure))
}

func (p *Proxy) handleSOCKS5(c net.Conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	noAuth, err := readGreeting(c)
	if err != nil {
		return
	}
	if !noAuth {
		c.Write([]byte{socksVersion, socksNoMethod})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	req, err := readRequest(c)
	if err != nil {
		var se *socksError
		if errors.As(err, &se) && se.reply != 0 {
			c.Write(socksReply(se.reply))
		}
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, handshakeTimeout)
	defer cancel()
	start := time.Now()
	dec := p.decider.Decide(ctx, req.host, req.port)
	if !dec.Allowed && !dec.Unresolved {
		p.auditDenied("socks5", dec)
		c.Write(socksReply(repNotAllowed))
		return
	}
	if dec.Unresolved {
		p.auditConn("socks5", dec, netip.AddrPort{}, 0, 0, start, dec.Err)
		c.Write(socksReply(repHostUnreachable))
		return
	}
	up, addr, err := p.dialer.DialDecision(ctx, dec)
	if err != nil {
		p.auditConn("socks5", dec, addr, 0, 0, start, err)
		c.Write(socksReply(dialReply(err)))
		return
	}
	if !p.track(up) {
		return
	}
	defer p.release(up)
	if _, err := c.Write(socksReply(repSucceeded)); err != nil {
		p.auditConn("socks5", dec, addr, 0, 0, start, err)
		return
	}
	c.SetDeadline(time.Time{})
	out, in, err := splice(c, up, p.cfg.IdleTimeout)
	p.auditConn("socks5", dec, addr, in, out, start, err)
}
