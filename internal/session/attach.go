package session

import (
	"bufio"
	"github.com/stockade-dev/stockade/internal/audit"
	"net"
	"sync"
)

// client is one attached connection. Output is queued per client, so a
// client that stops reading is dropped instead of stalling the session.
type client struct {
	conn    net.Conn
	out     chan frame
	closed  sync.Once
	done    chan struct{}
	flushed chan struct{} // closed when the writer has written its last frame
}

type frame struct {
	typ     byte
	payload []byte
}

const clientQueue = 1024 // frames buffered for a slow client

func newClient(conn net.Conn) *client {
	c := &client{conn: conn, out: make(chan frame, clientQueue), done: make(chan struct{}), flushed: make(chan struct{})}
	go func() {
		defer close(c.flushed)
		for {
			select {
			case f := <-c.out:
				if writeFrame(conn, f.typ, f.payload) != nil {
					c.close()
					return
				}
			case <-c.done:
				// Flush what was queued before the close (the exit frame).
				for {
					select {
					case f := <-c.out:
						writeFrame(conn, f.typ, f.payload)
					default:
						conn.Close()
						return
					}
				}
			}
		}
	}()
	return c
}

// send queues a frame; false when the client is too far behind.
func (c *client) send(typ byte, payload []byte) bool {
	select {
	case c.out <- frame{typ, payload}:
		return true
	default:
		return false
	}
}

func (c *client) close() { c.closed.Do(func() { close(c.done) }) }

// attach serves an attached client until it detaches or the session ends.
func (s *supervisor) attach(conn *net.UnixConn, r *bufio.Reader, req Request) {
	c := newClient(conn)
	s.mu.Lock()
	if b := s.screen.bytes(); len(b) > 0 {
		c.send(FrameOutput, b)
	}
	s.clients[c] = struct{}{}
	n := len(s.clients)
	s.mu.Unlock()
	s.log(audit.EventAttach, map[string]any{"pid": peerPID(conn), "clients": n})
	if req.Rows > 0 && req.Cols > 0 {
		// Nudge the size so that a full-screen program redraws for the
		// newcomer even when the size did not change.
		s.resize(req.Rows, req.Cols+1)
		s.resize(req.Rows, req.Cols)
	}
	defer func() {
		s.mu.Lock()
		_, still := s.clients[c]
		delete(s.clients, c)
		n := len(s.clients)
		s.mu.Unlock()
		if still {
			c.close()
			s.log(audit.EventDetach, map[string]any{"pid": peerPID(conn), "clients": n})
		}
	}()
	for {
		typ, payload, err := readFrame(r)
		if err != nil {
			return
		}
		switch typ {
		case FrameInput:
			if s.input(payload) {
				c.send(FrameOutput, []byte(inputDropped))
			}
		case FrameResize:
			if rows, cols, err := parseSize(payload); err == nil {
				s.resize(rows, cols)
			}
		case FrameDetach:
			return
		default:
			return // a client that speaks nonsense is dropped
		}
	}
}
