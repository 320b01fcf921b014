package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// DetachKey detaches an attached terminal: ctrl-].
const DetachKey = 0x1d

// Dial connects to a running session's control socket and sends req.
func Dial(store Store, id string, req Request) (net.Conn, *bufio.Reader, Response, error) {
	sess, err := store.Load(id)
	if err != nil {
		return nil, nil, Response{}, err
	}
	if !sess.Active() {
		return nil, nil, Response{}, fmt.Errorf("session %s is %s, not running", id, sess.Effective())
	}
	conn, err := net.DialTimeout("unix", store.Socket(id), 5*time.Second)
	if err != nil {
		return nil, nil, Response{}, fmt.Errorf("connecting to session %s: %w", id, err)
	}
	req.V = Version
	if err := writeJSONLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, Response{}, fmt.Errorf("talking to session %s: %w", id, err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return nil, nil, Response{}, fmt.Errorf("talking to session %s: %w", id, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil || !resp.OK {
		conn.Close()
		if resp.Error == "" {
			resp.Error = fmt.Sprintf("malformed answer %q", bytes.TrimSpace(line))
		}
		return nil, nil, resp, fmt.Errorf("session %s: %s", id, resp.Error)
	}
	return conn, r, resp, nil
}

// Stop asks a session to stop and waits (up to timeout) for its supervisor
// to exit. A session whose supervisor is already gone is marked so.
func Stop(store Store, id string, timeout time.Duration) (Session, error) {
	sess, err := store.Load(id)
	if err != nil {
		return sess, err
	}
	if !sess.Active() {
		if sess.Effective() == Dead {
			now := time.Now().UTC()
			store.Update(id, func(s *Session) error {
				s.State, s.Ended, s.Reason = Failed, &now, "supervisor died"
				return nil
			})
		}
		return store.Load(id)
	}
	// Hold a pidfd before asking, so the wait cannot mistake a reused PID.
	pidfd, perr := unix.PidfdOpen(sess.PID, 0)
	conn, _, _, err := Dial(store, id, Request{Op: OpStop})
	if err != nil {
		if perr == nil {
			unix.Close(pidfd)
		}
		return sess, err
	}
	conn.Close()
	if perr == nil {
		defer unix.Close(pidfd)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
			if err == unix.EINTR {
				continue
			}
			if n > 0 || err != nil {
				break
			}
		}
	}
	if sess, _ = store.Load(id); sess.Active() {
		return sess, fmt.Errorf("session %s did not stop within %s", id, timeout)
	}
	return sess, nil
}

// Attach connects the terminal in/out to a running session until the user
// detaches (ctrl-]) or the session ends. It returns the session's exit
// status when it ended, or detached=true.
func Attach(store Store, id string, in, out *os.File) (code int, detached bool, err error) {
	var rows, cols uint16
	if w, h, err := term.GetSize(int(in.Fd())); err == nil {
		rows, cols = uint16(h), uint16(w)
	}
	conn, r, _, err := Dial(store, id, Request{Op: OpAttach, Rows: rows, Cols: cols})
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	if state, err := term.MakeRaw(int(in.Fd())); err == nil {
		defer term.Restore(int(in.Fd()), state)
	}
	var wmu syncWriter
	wmu.w = conn
	detach := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			if i := bytes.IndexByte(buf[:n], DetachKey); i >= 0 {
				wmu.frame(FrameInput, buf[:i])
				// Before the frame: the supervisor's close must find
				// the detach already recorded.
				close(detach)
				wmu.frame(FrameDetach, nil)
				return
			}
			if n > 0 && wmu.frame(FrameInput, buf[:n]) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			if w, h, err := term.GetSize(int(in.Fd())); err == nil {
				wmu.frame(FrameResize, sizePayload(uint16(h), uint16(w)))
			}
		}
	}()
	for {
		typ, payload, err := readFrame(r)
		select {
		case <-detach:
			return 0, true, nil
		default:
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, false, fmt.Errorf("session %s closed the connection", id)
			}
			return 0, false, fmt.Errorf("session %s: %w", id, err)
		}
		switch typ {
		case FrameOutput:
			out.Write(payload)
		case FrameExit:
			var e Exit
			json.Unmarshal(payload, &e)
			return e.Code, false, nil
		}
	}
}

// syncWriter serializes frames from several goroutines onto one connection.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) frame(typ byte, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeFrame(s.w, typ, payload)
}
