package accept

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Backoff bounds of Accept's retries: short enough that a released
// descriptor is used at once, long enough not to spin on a full table.
const (
	minDelay = 5 * time.Millisecond
	maxDelay = time.Second
)

// temporary are the errors of accept(2) after which a later accept can
// succeed: out of descriptors (the process's or the system's), out of
// buffers or memory, or a client gone before it was accepted.
var temporary = []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR}

// Temporary reports whether err, from Accept or ReadFrom, passes.
func Temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range temporary {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Backoff is the wait between retries: it doubles from 5 ms to 1 s. The
// zero value is ready to use.
type Backoff struct{ d time.Duration }

// Next returns the next wait.
func (b *Backoff) Next() time.Duration {
	b.d = min(max(2*b.d, minDelay), maxDelay)
	return b.d
}

// listener retries temporary errors and, with a cap, holds at most the
// cap's connections.
type listener struct {
	net.Listener
	cap    *Cap
	refuse func(net.Conn)
	once   sync.Once
	closed chan struct{}
}

// Listen wraps l: its Accept returns only connections and the errors after
// which no accept can succeed (the listener was closed); it retries the
// rest. See Cap.Listen for a capped listener.
func Listen(l net.Listener) net.Listener {
	return &listener{Listener: l, closed: make(chan struct{})}
}

func (l *listener) Accept() (net.Conn, error) {
	var b Backoff
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			if !Temporary(err) {
				return nil, err
			}
			t := time.NewTimer(b.Next())
			select {
			case <-t.C:
			case <-l.closed:
				t.Stop()
				return nil, net.ErrClosed
			}
			continue
		}
		b = Backoff{}
		if l.cap == nil {
			return conn, nil
		}
		if c := l.cap.admit(conn, l.refuse); c != nil {
			return c, nil
		}
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
