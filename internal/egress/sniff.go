package egress

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"time"
)

// What a captured connection's first bytes named.
const (
	sniffNone = ""     // nothing within sniffWait, or not TLS or HTTP
	sniffTLS  = "sni"  // the server_name of a TLS ClientHello
	sniffHTTP = "http" // the Host header of a plain HTTP request
)

const (
	// sniffWait is how long a captured connection may stay silent before
	// it is decided by its address: a protocol where the server speaks
	// first (SMTP, MySQL, FTP) waits this long for its banner.
	sniffWait = 300 * time.Millisecond
	// maxClientHello bounds what is read of a TLS ClientHello: one record.
	maxClientHello = 5 + 16<<10
)

// sniff reads the start of a captured connection, without answering, to
// learn the name the client asks for. It returns the bytes it read, which
// go upstream first, the name (unchecked) and what carried it.
func sniff(c net.Conn) (prefix []byte, name, kind string) {
	c.SetReadDeadline(time.Now().Add(sniffWait))
	buf := make([]byte, 0, 4096)
	n, _ := c.Read(buf[:cap(buf)])
	buf = buf[:n]
	if n == 0 { // silent (the server speaks first), or closed
		return buf, "", sniffNone
	}
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetReadDeadline(time.Time{})
	switch {
	case buf[0] == 0x16: // TLS handshake record
		buf = readUntil(c, buf, maxClientHello, func(b []byte) bool {
			return len(b) >= 5 && len(b) >= 5+int(binary.BigEndian.Uint16(b[3:5]))
		})
		if name := clientHelloName(buf); name != "" {
			return buf, name, sniffTLS
		}
	case looksLikeHTTP(buf):
		buf = readUntil(c, buf, MaxHeaderBytes, func(b []byte) bool {
			return bytes.Contains(b, []byte("\r\n\r\n"))
		})
		if name := httpHost(buf); name != "" {
			return buf, name, sniffHTTP
		}
	}
	return buf, "", sniffNone
}

// readUntil reads from c onto buf until done(buf), max bytes, or an error.
func readUntil(c net.Conn, buf []byte, max int, done func([]byte) bool) []byte {
	for !done(buf) && len(buf) < max {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(cap(buf), max-len(buf)))...)[:len(buf)]
		}
		n, err := c.Read(buf[len(buf):min(cap(buf), max)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	return buf
}

// clientHelloName returns the host_name of the server_name extension of
// the ClientHello in the first TLS record of b, or "".
func clientHelloName(b []byte) string {
	if len(b) < 5 || b[0] != 0x16 {
		return ""
	}
	rec := b[5:min(len(b), 5+int(binary.BigEndian.Uint16(b[3:5])))]
	if len(rec) < 4 || rec[0] != 1 { // ClientHello
		return ""
	}
	n := int(rec[1])<<16 | int(rec[2])<<8 | int(rec[3])
	body := rec[4:min(len(rec), 4+n)]
	r := reader(body)
	if !r.skip(2+32) || !r.skipVec(1) || !r.skipVec(2) || !r.skipVec(1) {
		return ""
	}
	exts, ok := r.vec(2)
	for ok && len(exts) >= 4 {
		typ := binary.BigEndian.Uint16(exts)
		er := reader(exts[2:])
		var data reader
		if data, ok = er.vec(2); !ok {
			return ""
		}
		exts = er
		if typ != 0 { // server_name
			continue
		}
		list, ok := data.vec(2)
		for ok && len(list) >= 3 {
			nameType := list[0]
			lr := list[1:]
			var host reader
			if host, ok = lr.vec(2); !ok {
				return ""
			}
			list = lr
			if nameType == 0 { // host_name
				return string(host)
			}
		}
		return ""
	}
	return ""
}

// reader reads TLS vectors from the front of a byte slice.
type reader []byte

func (r *reader) skip(n int) bool {
	if len(*r) < n {
		return false
	}
	*r = (*r)[n:]
	return true
}

// vec returns a vector with a length prefix of n bytes.
func (r *reader) vec(n int) (reader, bool) {
	if len(*r) < n {
		return nil, false
	}
	l := 0
	for _, c := range (*r)[:n] {
		l = l<<8 | int(c)
	}
	if len(*r) < n+l {
		return nil, false
	}
	v := (*r)[n : n+l]
	*r = (*r)[n+l:]
	return v, true
}

func (r *reader) skipVec(n int) bool {
	_, ok := r.vec(n)
	return ok
}

// looksLikeHTTP: a method token of capital letters, then a space.
func looksLikeHTTP(b []byte) bool {
	for i, c := range b {
		switch {
		case c == ' ':
			return i > 0
		case c < 'A' || c > 'Z' || i >= 16:
			return false
		}
	}
	return false
}

// httpHost returns the host of the Host header of the request in b, or "".
func httpHost(b []byte) string {
	head, _, _ := bytes.Cut(b, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.EqualFold(k, "host") {
			continue
		}
		v = strings.TrimSpace(v)
		if h, _, err := net.SplitHostPort(v); err == nil {
			return h
		}
		return strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	}
	return ""
}
