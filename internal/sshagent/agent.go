package sshagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/accept"
)

// Config is what the filter needs.
type Config struct {
	// Upstream is the path of the user's agent's socket ($SSH_AUTH_SOCK
	// on the host).
	Upstream string
	// Keys are the fingerprints (Fingerprint's form) of the only keys the
	// sandbox is offered and may have signed with; empty: every key of the
	// user's agent.
	Keys []string
	// Audit hears ssh_sign and ssh_denied events; nil drops them.
	Audit func(event string, fields map[string]any)
	// MaxConns caps the client connections at once (each holds one to the
	// user's agent); a connection over it is answered SSH_AGENT_FAILURE
	// and closed, and the first one is a warning event. 0: 64.
	MaxConns int
}

// Agent is the filter.
type Agent struct {
	cfg     Config
	allowed map[string]bool // nil: every key
	clients *accept.Cap

	mu     sync.Mutex
	closed bool
	open   map[io.Closer]struct{} // listeners and connections, both sides
	wg     sync.WaitGroup
}

// New checks cfg and makes the filter.
func New(cfg Config) (*Agent, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("no upstream agent socket")
	}
	a := &Agent{cfg: cfg, open: map[io.Closer]struct{}{}}
	if len(cfg.Keys) > 0 {
		a.allowed = map[string]bool{}
		for _, k := range cfg.Keys {
			if !ValidFingerprint(k) {
				return nil, fmt.Errorf("key %q is not a SHA256 fingerprint as ssh-add -l prints it", k)
			}
			a.allowed[k] = true
		}
	}
	if a.cfg.MaxConns <= 0 {
		a.cfg.MaxConns = 64
	}
	if a.cfg.Audit == nil {
		a.cfg.Audit = func(string, map[string]any) {}
	}
	a.clients = accept.NewCap(a.cfg.MaxConns, func(max int) {
		a.cfg.Audit("warning", map[string]any{"message": fmt.Sprintf(
			"ssh agent filter: %d connections open, its cap; further connections are refused until some close", max)})
	})
	return a, nil
}

// Serve answers the connections of ln until Close; it returns nil then.
// Accept errors that pass (out of descriptors) are retried
// (internal/accept).
func (a *Agent) Serve(ln net.Listener) error {
	ln = a.clients.Listen(ln, func(c net.Conn) { writeMessage(c, failure) })
	if !a.hold(ln, false) {
		ln.Close()
		return nil
	}
	defer a.release(ln)
	for {
		c, err := ln.Accept()
		if err != nil {
			if a.isClosed() {
				return nil
			}
			return fmt.Errorf("accepting agent connections: %w", err)
		}
		if !a.hold(c, true) {
			c.Close()
			return nil
		}
		go func() {
			defer a.wg.Done()
			defer a.release(c)
			s := &conn{a: a, client: c}
			s.serve()
		}()
	}
}

// hold adds c to what Close closes, and with handler one to the handlers
// Close waits for (under the same lock, so never after Close began); it
// fails once the filter is closed.
func (a *Agent) hold(c io.Closer, handler bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.open[c] = struct{}{}
	if handler {
		a.wg.Add(1)
	}
	return true
}

// release closes c and forgets it.
func (a *Agent) release(c io.Closer) {
	a.mu.Lock()
	delete(a.open, c)
	a.mu.Unlock()
	c.Close()
}

func (a *Agent) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// Close stops serving: it closes the listeners and every connection (and
// with them the ones to the user's agent), and waits for their handlers.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.closed = true
	for c := range a.open {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
	return nil
}

// conn is one client connection, and its own connection to the user's
// agent (made at the first request that needs it), so that what a client
// binds there (session-bind) holds for that client only.
type conn struct {
	a       *Agent
	client  net.Conn
	up      net.Conn
	hostKey string // the server's host key the user's agent accepted in a session-bind
}

var failure = []byte{msgFailure}

func (s *conn) serve() {
	defer func() {
		if s.up != nil {
			s.a.release(s.up)
		}
	}()
	for {
		msg, err := readMessage(s.client)
		if err != nil {
			if errors.Is(err, errTooLong) || errors.Is(err, errEmpty) {
				s.denied("", err.Error())
				writeMessage(s.client, failure)
			}
			return
		}
		reply, keep := s.handle(msg)
		if err := writeMessage(s.client, reply); err != nil || !keep {
			return
		}
	}
}

// handle answers one message; keep is false when the connection must end
// (a malformed message: what follows it cannot be trusted to be framed).
func (s *conn) handle(msg []byte) (reply []byte, keep bool) {
	switch msg[0] {
	case msgRequestIdentities:
		if len(msg) != 1 {
			s.denied("request identities", "malformed message")
			return failure, false
		}
		return s.identities(), true
	case msgSignRequest:
		return s.sign(msg)
	case msgExtension:
		return s.extension(msg)
	}
	s.denied(requestName(msg[0]), "not forwarded: the sandbox may only list keys and sign")
	return failure, true
}

// identities answers REQUEST_IDENTITIES with the user's agent's keys that
// the sandbox is offered.
func (s *conn) identities() []byte {
	ids, err := s.listUpstream()
	if err != nil {
		s.denied("request identities", "the user's agent: "+err.Error())
		return failure
	}
	return identitiesAnswer(ids)
}

func (s *conn) listUpstream() ([]identity, error) {
	reply, err := s.roundTrip([]byte{msgRequestIdentities})
	if err != nil {
		return nil, err
	}
	if reply[0] == msgFailure {
		return nil, errors.New("it refused to list its keys")
	}
	ids, err := parseIdentities(reply)
	if err != nil {
		return nil, fmt.Errorf("its answer: %w", err)
	}
	if s.a.allowed == nil {
		return ids, nil
	}
	kept := ids[:0]
	for _, id := range ids {
		if s.a.allowed[Fingerprint(id.blob)] {
			kept = append(kept, id)
		}
	}
	return kept, nil
}

// sign forwards a SIGN_REQUEST for a key the sandbox is offered, and
// records it.
func (s *conn) sign(msg []byte) ([]byte, bool) {
	req, err := parseSignRequest(msg)
	if err != nil {
		s.denied("sign", "malformed message")
		return failure, false
	}
	fp := Fingerprint(req.key)
	f := signedData(req.data)
	f["fingerprint"], f["key_type"] = fp, keyType(req.key)
	if s.hostKey != "" {
		if _, ok := f["host_key"]; !ok {
			f["host_key"] = s.hostKey
		}
	}
	if s.a.allowed != nil && !s.a.allowed[fp] {
		f["reason"], f["request"] = "key not offered to the sandbox (--ssh-key)", "sign"
		s.a.cfg.Audit("ssh_denied", f)
		return failure, true
	}
	reply, err := s.roundTrip(msg)
	switch {
	case err != nil:
		f["error"] = "the user's agent: " + err.Error()
		reply = failure
	case reply[0] == msgSignResponse:
	case reply[0] == msgFailure:
		f["error"] = "the user's agent refused"
	default:
		f["error"] = fmt.Sprintf("the user's agent answered message type %d", reply[0])
		reply = failure
	}
	s.a.cfg.Audit("ssh_sign", f)
	return reply, true
}

// extension forwards session-bind@openssh.com, which only restricts the
// user's agent, and refuses every other extension.
func (s *conn) extension(msg []byte) ([]byte, bool) {
	r := reader{b: msg[1:]}
	name := r.string()
	if r.err != nil {
		s.denied("extension", "malformed message")
		return failure, false
	}
	if string(name) != sessionBindExtension {
		s.denied("extension "+printable(name), "not forwarded: the sandbox may only list keys and sign")
		return failure, true
	}
	hostKey, _, err := parseSessionBind(&r)
	if err != nil {
		s.denied("extension "+sessionBindExtension, "malformed message")
		return failure, false
	}
	reply, err := s.roundTrip(msg)
	if err != nil {
		return failure, true
	}
	switch reply[0] {
	case msgSuccess:
		// The user's agent checked the server's signature of the session.
		s.hostKey = Fingerprint(hostKey)
		return reply, true
	case msgFailure, msgExtensionFailure:
		return reply, true
	}
	return failure, true
}

// roundTrip sends msg to the user's agent and reads its answer.
func (s *conn) roundTrip(msg []byte) ([]byte, error) {
	if s.up == nil {
		up, err := net.Dial("unix", s.a.cfg.Upstream)
		if err != nil {
			return nil, err
		}
		if !s.a.hold(up, false) {
			up.Close()
			return nil, errors.New("the filter is closing")
		}
		s.up = up
	}
	if err := writeMessage(s.up, msg); err != nil {
		return nil, err
	}
	return readMessage(s.up)
}

// denied records a refused request.
func (s *conn) denied(request, reason string) {
	f := map[string]any{"reason": reason}
	if request != "" {
		f["request"] = request
	}
	s.a.cfg.Audit("ssh_denied", f)
}

// List returns the fingerprints of the keys the agent at sock holds.
func List(sock string) ([]string, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := writeMessage(c, []byte{msgRequestIdentities}); err != nil {
		return nil, err
	}
	reply, err := readMessage(c)
	if err != nil {
		return nil, err
	}
	if reply[0] == msgFailure {
		return nil, errors.New("it refused to list its keys (locked?)")
	}
	ids, err := parseIdentities(reply)
	if err != nil {
		return nil, fmt.Errorf("its answer: %w", err)
	}
	fps := make([]string, len(ids))
	for i, id := range ids {
		fps[i] = Fingerprint(id.blob)
	}
	return fps, nil
}
