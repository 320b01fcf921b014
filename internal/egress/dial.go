package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Dialer makes the outbound connection of an allowed Decision. It dials the
// addresses the Decider checked, one after the other, and never a name: a
// second lookup could answer differently (DNS rebinding).
type Dialer struct {
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialDecision connects over TCP to the first of dec.Addrs that answers, and
// returns the connection and the address it reached.
func (d *Dialer) DialDecision(ctx context.Context, dec Decision) (net.Conn, netip.AddrPort, error) {
	if !dec.Allowed || len(dec.Addrs) == 0 {
		return nil, netip.AddrPort{}, fmt.Errorf("dialing %s: not allowed", dec.Target())
	}
	var errs []error
	for _, a := range dec.Addrs {
		ap := netip.AddrPortFrom(a, dec.Port)
		c, err := d.Dial(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.AddrPort{}, fmt.Errorf("dialing %s: %w", dec.Target(), errors.Join(errs...))
}

// pipeSize is asked for each splice pipe (splice_linux.go): one splice
// moves at most a pipe's worth. The kernel may give less (pipe-max-size,
// pipe-user-pages-soft).
const pipeSize = 1 << 20

// tunnelBufSize is the copy buffer of one direction of a tunnel that cannot
// splice: two per tunnel, so 1000 busy tunnels beyond the pipes hold 250 MiB
// (an idle tunnel holds them too: they are taken when its copy starts).
const tunnelBufSize = 128 << 10

// splice copies client→upstream and upstream→client until both directions
// end, then closes both. A clean EOF in one direction is passed on as a
// half-close; an error closes everything. A tunnel ends when neither
// direction has moved a byte for idle. It returns the bytes sent upstream
// (out) and received from upstream (in).
func splice(client, upstream net.Conn, idle time.Duration) (out, in int64, err error) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	errc := make(chan error, 1)
	go func() {
		n, err := copyIdle(upstream, client, idle, &last)
		out = n
		errc <- err
	}()
	in, err = copyIdle(client, upstream, idle, &last)
	err2 := <-errc
	client.Close()
	upstream.Close()
	if err == nil {
		err = err2
	}
	return out, in, err
}

// copyIdle copies src to dst. On EOF it half-closes dst and returns nil; on
// any other error it closes both, which ends the other direction too.
//
// Between two TCP connections (under any wrappers that expose NetConn, as
// the proxy's connection cap does) the bytes go through splice(2) and never
// into this process (splice_linux.go); a wrapper that hid the TCPConn would
// silently turn this into a read/write loop with a copy each way, and
// TestTunnelSplices fails. Otherwise (tests, no pipe free) it copies through
// a buffer.
func copyIdle(dst, src net.Conn, idle time.Duration, last *atomic.Int64) (int64, error) {
	var move func() (n int64, rerr, werr error)
	if s := newSplicer(dst, src); s != nil {
		defer s.Close()
		move = func() (int64, error, error) { return s.move(pipeSize) }
	} else {
		buf := tunnelBuffers.Get()
		defer tunnelBuffers.Put(buf)
		move = bufferedMove(dst, src, buf)
	}
	var n int64
	// Deadlines are pushed forward at most every idle/8, not per move: the
	// timer updates would otherwise cost a large share of the throughput.
	step := idle / 8
	var set time.Time
	for {
		if now := time.Now(); now.Sub(set) > step {
			set = now
			src.SetReadDeadline(now.Add(idle))
			dst.SetWriteDeadline(now.Add(idle))
		}
		k, rerr, werr := move()
		n += k
		if k > 0 {
			last.Store(time.Now().UnixNano())
		}
		if werr != nil {
			src.Close()
			dst.Close()
			return n, werr
		}
		if rerr == nil {
			continue
		}
		if done, err := copyEnded(dst, src, rerr, k > 0, idle, last); done {
			return n, err
		}
		set = time.Time{}
	}
}

// tunnelBuffers are reused across tunnels: short HTTPS connections would
// otherwise each leave two buffers of garbage.
var tunnelBuffers = newBufferPool(tunnelBufSize)

// bufferedMove returns a move for copyIdle that reads once from src into buf
// and writes what it read to dst.
func bufferedMove(dst, src net.Conn, buf []byte) func() (int64, error, error) {
	return func() (int64, error, error) {
		nr, rerr := src.Read(buf)
		if nr == 0 {
			return 0, rerr, nil
		}
		nw, werr := dst.Write(buf[:nr])
		return int64(nw), rerr, werr
	}
}

// copyEnded decides what an error of one direction of a tunnel means:
// EOF half-closes dst; a timeout while the tunnel moved bytes (this
// direction just now, or the other one within idle: a download with a
// silent client) goes on; anything else closes both. done is false when
// the copy goes on.
func copyEnded(dst, src net.Conn, err error, moved bool, idle time.Duration, last *atomic.Int64) (done bool, _ error) {
	switch {
	case errors.Is(err, io.EOF):
		closeWrite(dst)
		return true, nil
	case isTimeout(err) && (moved || time.Since(time.Unix(0, last.Load())) < idle):
		return false, nil
	}
	src.Close()
	dst.Close()
	if isTimeout(err) {
		return true, fmt.Errorf("idle for %v", idle)
	}
	if errors.Is(err, net.ErrClosed) {
		return true, nil // closed by the other direction or by Close
	}
	return true, err
}

// tcpConn is the *net.TCPConn under c's wrappers, or nil.
func tcpConn(c net.Conn) *net.TCPConn {
	for range 8 {
		switch t := c.(type) {
		case *net.TCPConn:
			return t
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
		default:
			return nil
		}
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// countingConn counts the bytes read from and written to a connection.
// Each Read and Write holds mu shared while it runs, so that settle, once
// the connection is closed, returns counts no call in flight can change.
type countingConn struct {
	net.Conn
	mu            sync.RWMutex
	read, written atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// count adds n bytes read past Read (spliced from the socket).
func (c *countingConn) count(n int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.read.Add(n)
}

// settle waits for the Reads and Writes in flight to return and returns the
// counts. Close the connection first, or a blocked call is waited for.
func (c *countingConn) settle() (read, written int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read.Load(), c.written.Load()
}
