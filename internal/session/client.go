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

	"github.com/stockade-dev/stockade/internal/termstate"
)

// DetachKey detaches an attached terminal: ctrl-].
const DetachKey = 0x1d

// ControlTimeout bounds each exchange with a session's control socket:
// connecting, sending the request, reading the answer.
const ControlTimeout = 5 * time.Second

// ErrNoAnswer is wrapped by Dial's errors when the session's supervisor did
// not answer at all (as opposed to answering with an error).
var ErrNoAnswer = errors.New("no answer on the control socket")

// Dial connects to a running session's control socket and sends req. The
// request and its answer have ControlTimeout; an attached connection then
// has none.
func Dial(store Store, id string, req Request) (net.Conn, *bufio.Reader, Response, error) {
	sess, err := store.Load(id)
	if err != nil {
		return nil, nil, Response{}, err
	}
	if !sess.Active() {
		hint := fmt.Sprintf("; its output: stockade logs -s %s --output", id)
		if sess.Foreground {
			hint = " (a foreground run)"
		}
		return nil, nil, Response{}, fmt.Errorf("session %s is %s, not running%s", id, sess.Effective(), hint)
	}
	if sess.Foreground {
		return nil, nil, Response{}, fmt.Errorf("session %s is a foreground run (stockade, pid %d) in another terminal: it has no control socket; ^C there ends it", id, sess.PID)
	}
	noAnswer := func(err error) error {
		return fmt.Errorf("session %s: %w within %s (%v); its supervisor (pid %d) is stuck or out of descriptors: 'stockade stop -s %s' ends it through its process",
			id, ErrNoAnswer, ControlTimeout, err, sess.PID, id)
	}
	conn, err := net.DialTimeout("unix", store.Socket(id), ControlTimeout)
	if err != nil {
		return nil, nil, Response{}, noAnswer(err)
	}
	conn.SetDeadline(time.Now().Add(ControlTimeout))
	req.V = Version
	if err := writeJSONLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, Response{}, noAnswer(err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return nil, nil, Response{}, noAnswer(err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil || !resp.OK {
		conn.Close()
		if resp.Error == "" {
			resp.Error = fmt.Sprintf("malformed answer %q", bytes.TrimSpace(line))
		}
		return nil, nil, resp, fmt.Errorf("session %s: %s", id, resp.Error)
	}
	conn.SetDeadline(time.Time{})
	return conn, r, resp, nil
}

// Stop asks a session to stop and waits (up to timeout) for its supervisor
// to exit. When the control socket does not answer, Stop sends SIGTERM to
// the supervisor through a pidfd (verified to be the recorded supervisor,
// not a reused PID) and tells warn; the supervisor stops the session as it
// does for a request. A session whose supervisor is already gone is marked
// so.
func Stop(store Store, id string, timeout time.Duration, warn func(string)) (Session, error) {
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
	pidfd, perr := openSupervisor(sess)
	if perr == nil {
		defer unix.Close(pidfd)
	}
	conn, _, _, err := Dial(store, id, Request{Op: OpStop})
	switch {
	case err == nil:
		conn.Close()
	case errors.Is(err, ErrNoAnswer) && perr == nil:
		if err := terminate(pidfd); err != nil {
			return sess, fmt.Errorf("session %s: signaling its supervisor (pid %d): %w", id, sess.PID, err)
		}
		warn(fmt.Sprintf("session %s did not answer on its control socket; sent SIGTERM to its supervisor (pid %d)", id, sess.PID))
	default:
		// Another stop (or the command's end) may have ended the session
		// between the first look and the request: then it is stopped, as
		// asked.
		if now, lerr := store.Load(id); lerr == nil && !now.Active() {
			return now, nil
		}
		return sess, err
	}
	if perr == nil {
		waitExit(pidfd, timeout)
	}
	if sess, _ = store.Load(id); sess.Active() {
		return sess, fmt.Errorf("session %s did not stop within %s; 'kill -KILL %d' ends its supervisor, without the checks at the end of a run", id, timeout, sess.PID)
	}
	return sess, nil
}

// Attach connects the terminal in/out to a running session until the user
// detaches (ctrl-]) or the session ends. It returns the session's exit
// status when it ended, or detached=true. Either way it puts back the
// terminal modes the session's output changed (termstate), as tmux does
// for a client that detaches: the command keeps its full-screen interface,
// the user's terminal gets its own screen back. On a detach the cursor is
// then at the start of a clean line, for the caller's message.
//
// Once the session has ended, report is what the checks after its runs
// found (Exit.Report), for the caller to print: the terminal's modes are
// undone and the cursor is at the start of a clean line by then.
func Attach(store Store, id string, in, out *os.File) (code int, detached bool, report []string, err error) {
	var rows, cols uint16
	if w, h, err := term.GetSize(int(in.Fd())); err == nil {
		rows, cols = uint16(h), uint16(w)
	}
	conn, r, _, err := Dial(store, id, Request{Op: OpAttach, Rows: rows, Cols: cols})
	if err != nil {
		return 0, false, nil, err
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
	var screen termstate.State
	defer func() { out.Write(screen.Undo()) }()
	for {
		typ, payload, err := readFrame(r)
		select {
		case <-detach:
			out.Write(screen.Detach())
			screen = termstate.State{} // the deferred Undo has nothing left to do
			return 0, true, nil, nil
		default:
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, false, nil, fmt.Errorf("session %s closed the connection", id)
			}
			return 0, false, nil, fmt.Errorf("session %s: %w", id, err)
		}
		switch typ {
		case FrameOutput:
			out.Write(payload)
			screen.Write(payload)
		case FrameExit:
			var e Exit
			json.Unmarshal(payload, &e)
			if len(e.Report) > 0 {
				out.Write(screen.Detach()) // a clean line for the report
				screen = termstate.State{}
			}
			return e.Code, false, e.Report, nil
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
