package session

import (
	"os"
	"sync"
)

// The command's terminal has two directions the supervisor serves, and the
// command controls how fast each moves: it may never read its input, and it
// may write output as fast as the CPU lets it. Neither may stall the
// supervisor or make it work in proportion to more than the bytes moved.

// inputMax bounds the typed or pasted input queued for a command that does
// not read it. Beyond it input is dropped, and the client is told once per
// episode; the attach loop never waits on the terminal, so the detach key
// always reaches the supervisor.
const inputMax = 64 << 10

// inputDropped is what a client sees when its input is dropped.
const inputDropped = "\r\n[stockade: input dropped: the command has not read the last 64 KiB typed; ctrl-] still detaches]\r\n"

// inputQueue carries input to one terminal master. A goroutine of its own
// writes it (a write to a pty the command does not read blocks); the
// attach loops only append.
type inputQueue struct {
	mu      sync.Mutex
	buf     []byte
	closed  bool
	refused bool // input was dropped since the queue last drained
	wake    chan struct{}
}

func newInputQueue() *inputQueue { return &inputQueue{wake: make(chan struct{}, 1)} }

// push queues b. When b does not fit it is dropped, and tell is true the
// first time since the queue last drained: the caller tells its client.
func (q *inputQueue) push(b []byte) (tell bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if len(q.buf)+len(b) > inputMax {
		tell = !q.refused
		q.refused = true
		return tell
	}
	q.buf = append(q.buf, b...)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return false
}

// close ends feed; what is queued is dropped.
func (q *inputQueue) close() {
	q.mu.Lock()
	q.closed, q.buf = true, nil
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// feed writes the queue to m until the queue is closed or m fails (the
// command's terminal is gone: a blocked write then returns EIO).
func (q *inputQueue) feed(m *os.File) {
	for range q.wake {
		for {
			q.mu.Lock()
			if q.closed {
				q.mu.Unlock()
				return
			}
			if len(q.buf) == 0 {
				q.refused = false
				q.mu.Unlock()
				break
			}
			b := q.buf
			q.buf = nil
			q.mu.Unlock()
			if _, err := m.Write(b); err != nil {
				q.close()
				return
			}
		}
	}
}

// ring holds the last scrollback bytes of output. A write copies only what
// it is given (the last scrollback bytes of it); the replay on attach, rare,
// copies the whole ring.
type ring struct {
	buf  []byte // scrollback bytes, allocated on the first write
	next int    // where the next byte goes
	full bool   // buf has wrapped: its oldest byte is at next
}

func (r *ring) write(p []byte) {
	if r.buf == nil {
		r.buf = make([]byte, scrollback)
	}
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.next, r.full = 0, true
		return
	}
	n := copy(r.buf[r.next:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.next = (r.next + len(p)) % len(r.buf)
	if r.next == 0 && len(p) > 0 {
		r.full = true
	}
}

// bytes returns a copy of what the ring holds, oldest first, starting on a
// character: a cut inside one would leave a lone 0x80–0x9F byte, a C1
// control to some terminals.
func (r *ring) bytes() []byte {
	var out []byte
	if r.full {
		out = append(append(out, r.buf[r.next:]...), r.buf[:r.next]...)
		cut := 0
		for cut < len(out) && out[cut]&0xc0 == 0x80 {
			cut++
		}
		return out[cut:]
	}
	return append(out, r.buf[:r.next]...)
}
