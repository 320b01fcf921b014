package accept

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Refusals are bounded in number and in time: each holds a descriptor.
const (
	maxRefusers  = 8
	refuseWithin = time.Second
)

// Cap holds at most Max connections open at once across the listeners
// that share it. Its methods are safe for concurrent use.
type Cap struct {
	max    int
	onFull func(max int)

	mu       sync.Mutex
	open     int
	full     bool // OnFull was called
	refused  atomic.Uint64
	refusers chan struct{}
}

// NewCap returns a cap of n connections (at least one). onFull (nil:
// nothing) is called once, at the first refusal.
func NewCap(n int, onFull func(max int)) *Cap {
	return &Cap{max: max(n, 1), onFull: onFull, refusers: make(chan struct{}, maxRefusers)}
}

// Listen wraps l like the package's Listen, and holds l's connections
// under the cap. refuse (nil: close) writes the protocol's refusal to a
// connection over the cap; it has a second.
func (c *Cap) Listen(l net.Listener, refuse func(net.Conn)) net.Listener {
	return &listener{Listener: l, cap: c, refuse: refuse, closed: make(chan struct{})}
}

// Max returns the cap.
func (c *Cap) Max() int { return c.max }

// Open returns how many connections are open under the cap.
func (c *Cap) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// Refused returns how many connections were refused so far.
func (c *Cap) Refused() uint64 { return c.refused.Load() }

// admit returns conn wrapped so that its Close frees its place, or nil
// when the cap is reached: conn is then refused and closed.
func (c *Cap) admit(conn net.Conn, refuse func(net.Conn)) net.Conn {
	c.mu.Lock()
	if c.open < c.max {
		c.open++
		c.mu.Unlock()
		return &capped{Conn: conn, cap: c}
	}
	first := !c.full
	c.full = true
	c.mu.Unlock()
	c.refused.Add(1)
	if first && c.onFull != nil {
		c.onFull(c.max)
	}
	if refuse == nil {
		conn.Close()
		return nil
	}
	select {
	case c.refusers <- struct{}{}:
	default:
		conn.Close() // already refusing as many as it may: no message
		return nil
	}
	go func() {
		defer func() { <-c.refusers }()
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(refuseWithin))
		refuse(conn)
	}()
	return nil
}

func (c *Cap) release() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
}

// capped is a connection counted by a cap.
type capped struct {
	net.Conn
	cap  *Cap
	once sync.Once
}

func (c *capped) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.cap.release)
	return err
}

// NetConn returns the connection under the count, so that a tunnel can
// splice(2) between two *net.TCPConn; Close must still go through c.
func (c *capped) NetConn() net.Conn { return c.Conn }

// CloseWrite half-closes the connection when it can; a tunnel relies on it.
func (c *capped) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// RefuseHTTP returns a refusal that answers an HTTP client with 503 and
// msg, then lets it read the answer before the close.
func RefuseHTTP(msg string) func(net.Conn) {
	return refuseHTTP("503 Service Unavailable", "Retry-After: 1\r\n", msg+"\n")
}

// ForbidHTTP returns a refusal that answers an HTTP client with 403 and
// body, then lets it read the answer before the close.
func ForbidHTTP(body string) func(net.Conn) {
	return refuseHTTP("403 Forbidden", "", body)
}

func refuseHTTP(status, headers, body string) func(net.Conn) {
	resp := "HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\n" + headers +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	return func(conn net.Conn) {
		if _, err := io.WriteString(conn, resp); err != nil {
			return
		}
		Drain(conn)
	}
}

// Drain half-closes conn and reads what the client still sends until it
// closes or the deadline passes: a close with unread data would be a reset,
// which can destroy the answer before the client reads it.
func Drain(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(conn, 64<<10))
}
