package egress

import (
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// The body of a forwarded answer of known length is spliced, like a
// tunnel's bytes, once the transport has handed over the part of it that
// came with the answer's head: the transport and the reverse proxy would
// otherwise copy every byte into the supervisor and out again.
//
// answerBody stands for the transport's body in the reverse proxy, which
// copies it with Read and Write. Its Reads go to the transport's until one
// of them has read from the socket: the transport's buffer then holds no
// byte of the body (bufio takes nothing from the socket while it has bytes
// buffered, and at most one read after them; a Read of twice its buffer
// has room for both). When enough is left, the next Read hands the
// rest to the client's ResponseWriter as an upstreamBody (its ReadFrom:
// net/http flushes the head and what was written, then calls the client
// connection's ReadFrom, which clientConn splices) and reports EOF.

// spliceMin is the least that is left of an answer's body for the rest to
// be spliced: below it the pipe's set-up costs more than the copy saves.
const spliceMin = 1 << 20

// transportReadBuffer is the transport's read buffer (forward's Transport).
const transportReadBuffer = 64 << 10

// answerBody is a forwarded answer's body: see above.
type answerBody struct {
	io.ReadCloser                     // the transport's body
	w             http.ResponseWriter // the client's
	up            *countingConn       // what the transport reads, and counts
	left          int64               // bytes of the body not yet passed on
	drained       bool                // the transport holds none of them
	idle          time.Duration
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.drained && b.left >= spliceMin {
		if rf, ok := b.w.(io.ReaderFrom); ok {
			u := &upstreamBody{up: b.up, left: b.left, idle: b.idle}
			_, err := rf.ReadFrom(u)
			b.left = u.left
			if err == nil && b.left > 0 {
				err = io.ErrUnexpectedEOF
			}
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
	}
	before := b.up.read.Load()
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if len(p) >= 2*transportReadBuffer && b.up.read.Load() != before {
		b.drained = true
	}
	return n, err
}

// upstreamBody is what is left of an answer's body, on the upstream
// socket. Its bytes are counted as the transport's are.
type upstreamBody struct {
	up   *countingConn
	left int64
	idle time.Duration
}

// Read reads from the socket, never past the body (net/http reads the
// first bytes itself when nothing was written yet).
func (u *upstreamBody) Read(p []byte) (int, error) {
	if u.left <= 0 {
		return 0, io.EOF
	}
	n, err := u.up.Read(p[:min(int64(len(p)), u.left)])
	u.left -= int64(n)
	return n, err
}

// spliceTo moves the rest of the body to dst, spliced when both are TCP
// connections and a pipe is free, else copied. Neither side may stay
// silent for idle. It returns the bytes that reached dst.
func (u *upstreamBody) spliceTo(dst net.Conn) (int64, error) {
	src := u.up.Conn
	s := newSplicer(dst, src)
	if s == nil {
		buf := tunnelBuffers.Get()
		defer tunnelBuffers.Put(buf)
		return io.CopyBuffer(struct{ io.Writer }{dst}, u, buf)
	}
	defer s.Close()
	// The client's connection goes on serving requests: no deadline of
	// this copy outlives it.
	defer dst.SetWriteDeadline(time.Time{})
	var n int64
	step := u.idle / 8 // as copyIdle: not a timer update per move
	var set time.Time
	for u.left > 0 {
		if now := time.Now(); now.Sub(set) > step {
			set = now
			src.SetReadDeadline(now.Add(u.idle))
			dst.SetWriteDeadline(now.Add(u.idle))
		}
		k, rerr, werr := s.move(int(min(u.left, pipeSize)))
		n += k
		u.left -= k
		u.up.count(k)
		if werr != nil {
			return n, werr
		}
		if errors.Is(rerr, io.EOF) {
			return n, io.ErrUnexpectedEOF
		}
		if rerr != nil {
			return n, rerr
		}
	}
	return n, nil
}

// clientConn is a connection the HTTP proxy accepted. Its ReadFrom, which
// net/http's ResponseWriter calls for a body it is given to read from,
// splices an upstreamBody; anything else is copied.
type clientConn struct{ net.Conn }

func (c *clientConn) ReadFrom(r io.Reader) (int64, error) {
	if u, ok := r.(*upstreamBody); ok {
		return u.spliceTo(c.Conn)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// NetConn returns the connection under it: a tunnel splices from it.
func (c *clientConn) NetConn() net.Conn { return c.Conn }

// CloseWrite half-closes the connection when it can.
func (c *clientConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// clientListener hands out clientConns.
type clientListener struct{ net.Listener }

func (l clientListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &clientConn{Conn: c}, nil
}
