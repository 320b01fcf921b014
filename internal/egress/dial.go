package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
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

// tunnelBufSize is the copy buffer of one direction of one tunnel: two per
// tunnel, so 1000 tunnels hold 32 MiB.
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
func copyIdle(dst, src net.Conn, idle time.Duration, last *atomic.Int64) (int64, error) {
	buf := make([]byte, tunnelBufSize)
	var n int64
	// Deadlines are pushed forward at most every idle/8, not per read: the
	// timer updates would otherwise cost a large share of the throughput.
	step := idle / 8
	var set time.Time
	for {
		if now := time.Now(); now.Sub(set) > step {
			set = now
			src.SetReadDeadline(now.Add(idle))
			dst.SetWriteDeadline(now.Add(idle))
		}
		nr, rerr := src.Read(buf)
		if nr > 0 {
			last.Store(time.Now().UnixNano())
			nw, werr := dst.Write(buf[:nr])
			n += int64(nw)
			if werr != nil {
				src.Close()
				dst.Close()
				return n, werr
			}
		}
		switch {
		case rerr == nil:
		case errors.Is(rerr, io.EOF):
			closeWrite(dst)
			return n, nil
		case isTimeout(rerr) && time.Since(time.Unix(0, last.Load())) < idle:
			// The other direction is busy: a download with a silent client.
			set = time.Time{}
		default:
			src.Close()
			dst.Close()
			if isTimeout(rerr) {
				return n, fmt.Errorf("idle for %v", idle)
			}
			if errors.Is(rerr, net.ErrClosed) {
				return n, nil // closed by the other direction or by Close
			}
			return n, rerr
		}
	}
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
type countingConn struct {
	net.Conn
	read, written atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}
