package session

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/accept"
	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/gitguard"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/termfilter"
	"github.com/stockade-dev/stockade/internal/tripwire"
)

// Auditor records the session's events; see package audit.
type Auditor interface {
	Log(source, event string, fields map[string]any) error
	// Ended is closed when the log can no longer take the session's
	// events; EndReason says why.
	Ended() <-chan struct{}
	EndReason() string
}

// Config is what a supervisor is started with.
type Config struct {
	Store    Store         `json:"store"`
	ID       string        `json:"id"`
	Job      job.Job       `json:"job"`
	Limits   cgroup.Limits `json:"limits"`
	Tripwire bool          `json:"tripwire,omitempty"`
	// Loosened lists every setting that loosens the policy; Enforcement is
	// the start line of the enforcement layers. Both go into the audit log.
	Loosened    []string `json:"loosened"`
	Enforcement string   `json:"enforcement"`

	// Required are the limits set on purpose: not enforced, the start fails.
	Required []cgroup.Requirement `json:"required,omitempty"`

	// Agent is the agent's name ("claude"), empty for `stockade run`;
	// Command is the command as the user gave it (the agent's name and
	// the user's arguments; nil: Job.Argv); Guide records the agent's
	// guide by hash. The start event and `stockade list` show these.
	Agent   string   `json:"agent,omitempty"`
	Command []string `json:"command,omitempty"`
	Guide   *Guide   `json:"guide,omitempty"`
	// Foreground: the run is a foreground `stockade run` (Record), which
	// has no supervisor.
	Foreground bool `json:"foreground,omitempty"`
}

// Restart policy: a command that crashes (is killed by SIGSEGV, SIGBUS,
// SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP or SIGKILL: a fault, an abort, a
// seccomp kill, the OOM killer) is started again after
// a backoff that doubles from restartBase up to restartMax; after
// maxRestarts crashes the session fails. An exit, with any status, or a stop
// ends the session: a failing `make test` is an answer, not a crash.
var (
	restartBase = 500 * time.Millisecond
	restartMax  = 15 * time.Second
	maxRestarts = 5
	stopGrace   = 10 * time.Second
)

// scrollback is how many bytes of terminal output are replayed on attach.
// They are kept after the terminal filter, so the replay is filtered too; a
// cut through a sequence that passed leaves its tail, which a terminal
// shows as text: no sequence can start without its ESC.
const scrollback = 64 << 10

// supervisor is the state of one running session.
type supervisor struct {
	cfg   Config
	audit Auditor
	ln    net.Listener

	mu         sync.Mutex
	clients    map[*client]struct{}
	master     *os.File
	pumped     chan struct{} // closed when the master's output is all read
	in         *inputQueue   // the master's input
	rows, cols uint16
	screen     ring // the last scrollback bytes of output
	initPID    int
	initFD     int // a pidfd of init while initPID is set, or -1
	stopping   bool
	stop       chan struct{} // closed by the first stop request
	auditOnce  sync.Once
	proxy      *egress.Proxy
	rules      *egress.Rules
	podRules   *egress.Rules // with --containers: the containers' rules
	auth       *authproxy.Proxy
	auditEnd   string        // why the audit log ended, "" while it goes on
	cg         *cgroup.Group // the session's limits; the output relay joins its cpu group (chargeRelay)
	// output is the session's transcript (transcript.go), nil when it
	// could not be made or a write failed; omu orders its writes.
	omu    sync.Mutex
	output *transcript
	// dropped holds the classes of escape sequences the terminal filter
	// has dropped and the audit log has recorded, once each.
	dropped map[termfilter.Class]bool
	// ended and review are what the checks after the runs reported, for
	// the clients attached at the end (Exit.Report, see reportEnd):
	// review the plain REVIEW lines, ended the rest; endedLeft how many
	// lines are left to the audit log; under mu.
	ended, review reportTier
	endedLeft     int
}

// Supervise runs the session until its command is done for good. ready is
// called once: with nil when the command first started, or with the error
// that kept it from starting. The returned status is the command's last.
func Supervise(cfg Config, log Auditor, ready func(error)) int {
	s := &supervisor{cfg: cfg, audit: log, clients: map[*client]struct{}{}, rows: 24, cols: 80, stop: make(chan struct{}), initFD: -1}
	var once sync.Once
	signalReady := func(err error) { once.Do(func() { ready(err) }) }

	sock := cfg.Store.Socket(cfg.ID)
	os.Remove(sock) // a socket left by a crashed supervisor of this same session
	ln, err := net.Listen("unix", sock)
	if err != nil {
		signalReady(fmt.Errorf("listening on %s: %w", sock, err))
		return sandbox.ExitSetup
	}
	os.Chmod(sock, 0o600)
	// Out of descriptors, the accept loop waits instead of ending: the
	// session must stay controllable once they are released.
	s.ln = accept.Listen(ln)
	go s.accept()
	// stockade stop signals the supervisor when the socket does not answer.
	// While no run's sandbox is there to take them (in a restart's
	// backoff, after the last run), SIGTERM and SIGINT are that stop and
	// nothing else: the relay's default would end the supervisor and
	// cancel the registration below.
	sandbox.SignalsWhenIdle(func(sig os.Signal) {
		if sig != unix.SIGTERM && sig != unix.SIGINT {
			sandbox.DefaultIdle(sig)
		}
	})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		for sig := range sigs {
			s.requestStop("signal " + unix.SignalName(sig.(unix.Signal)))
		}
	}()
	s.log(audit.EventStart, startFields(cfg))
	if s.output, err = openTranscript(cfg.Store, cfg.ID); err != nil {
		s.log(audit.EventWarning, map[string]any{"message": "the session's output is not kept: " + err.Error()})
	}
	defer s.closeTranscript()

	sandbox.Warm()
	// The session's one set of services serves every run, so that
	// runtime rules outlive restarts.
	svc, err := job.Compose(cfg.Job, job.Wiring{Limits: cfg.Limits, Required: cfg.Required, Event: s.logFrom})
	if err != nil {
		signalReady(err)
		ln.Close()
		return sandbox.ExitSetup
	}
	defer svc.Close()
	s.proxy, s.rules, s.auth, s.podRules = svc.Proxy, svc.Rules, svc.Auth, svc.PodRules

	watchDone := make(chan struct{})
	defer close(watchDone)
	go s.watchAudit(watchDone)

	report, err := svc.Limits()
	if err != nil {
		signalReady(err)
		ln.Close()
		return sandbox.ExitSetup
	}
	s.cg = svc.Group()
	for _, p := range report.NotEnforced {
		s.log(audit.EventWarning, map[string]any{"message": p.String()})
	}

	code, reason := s.loop(svc, signalReady)
	// The proxies finish what they were serving, and log it, before the
	// stop event ends the log: a command that exits as soon as its last
	// reply arrives leaves the auth proxy's event for that reply to come.
	svc.CloseProxies()
	s.finish(code, s.endReason(reason))
	return code
}

// loop runs the command, restarting it after crashes.
func (s *supervisor) loop(svc *job.Services, ready func(error)) (int, string) {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		ready(err)
		return sandbox.ExitSetup, err.Error()
	}
	defer devnull.Close()
	backoff := restartBase
	for attempt := 0; ; attempt++ {
		code, err := svc.Run(job.Hooks{
			Stdin: devnull, Stdout: devnull, Stderr: devnull, TTY: true,
			OnPTY: s.setMaster,
			Stages: job.Stages{
				InitStarted: func(pid int) error {
					fd := initHandle(pid)
					s.mu.Lock()
					s.initPID, s.initFD = pid, fd
					stopping := s.stopping
					s.mu.Unlock()
					if stopping {
						return errors.New("session stopped")
					}
					return s.cfg.Store.Update(s.cfg.ID, func(sess *Session) error {
						sess.State, sess.InitPID, sess.Restarts = Running, pid, attempt
						return nil
					})
				},
				CommandStarted: func() {
					ready(nil)
					if attempt == 0 {
						svc.SweepCgroups(s.cfg.Store.Gone)
					}
				},
			},
			Snapshot: true,
			Restored: func(changes []tripwire.Change, err error) {
				s.report().Restored(changes, err)
				s.reportEnd(RestoredLines(changes, err)...)
			},
			OnFinding: func(f job.Finding) {
				s.report().Finding(f)
				s.reportEnd(f.String())
			},
			GitChecked: func(found []gitguard.Finding, err error) {
				s.report().GitChecked(found, err)
				s.reportEnd(GitLines(found, err)...)
			},
			OnTamper: s.tamperHook(),
			Warn:     s.report().Warn,
		})
		s.clearMaster()
		s.mu.Lock()
		s.initPID = 0
		closeHandle(s.initFD)
		s.initFD = -1
		stopping := s.stopping
		s.mu.Unlock()
		var se *sandbox.StepError
		switch {
		case stopping:
			return code, "stopped"
		case errors.As(err, &se) || (err != nil && attempt == 0):
			s.log(audit.EventInitFailure, map[string]any{"step": stepOf(err), "error": err.Error(), "status": code})
			ready(err)
			return code, "failed: " + err.Error()
		case err == nil && !crashed(code):
			return code, "exited"
		case attempt >= maxRestarts:
			return code, fmt.Sprintf("failed: crashed %d times, last with status %d", attempt+1, code)
		}
		s.log(audit.EventRestart, map[string]any{"status": code, "attempt": attempt + 1, "backoff_ms": backoff.Milliseconds()})
		s.cfg.Store.Update(s.cfg.ID, func(sess *Session) error { sess.State = Restarting; return nil })
		select {
		case <-time.After(backoff):
		case <-s.stop:
			return code, "stopped"
		}
		backoff = min(backoff*2, restartMax)
	}
}

// crashSignals are the deaths that restart the command. SIGINT, SIGTERM,
// SIGHUP and the like are someone's decision to end it, such as a ^C.
var crashSignals = []unix.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGILL, unix.SIGFPE, unix.SIGABRT, unix.SIGSYS, unix.SIGTRAP, unix.SIGKILL}

// crashed reports whether status says the command crashed.
func crashed(status int) bool {
	return slices.Contains(crashSignals, unix.Signal(status-sandbox.ExitSignalBase))
}

// report is the session's reporter: its audit log.
func (s *supervisor) report() Reporter { return Reporter{Event: s.logFrom} }

// reportEnd keeps lines of the report for the clients attached at the
// end, up to maxReport lines and maxReportBytes (the command chooses the
// names in them: the exit frame must stay far below maxFrame). Each is
// kept as it will be shown (termfilter.Visible: the frame's JSON would
// turn bytes that are not UTF-8 into U+FFFD, and two names into one).
// The lines that need the user now (QUARANTINED, REVIEW NOW, TAMPER, the
// git check's) come before the plain REVIEW ones, so that a flood of
// files the command made cannot push them out (endReport).
func (s *supervisor) reportEnd(lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range lines {
		l = termfilter.Visible(l)
		t := &s.ended
		if strings.HasPrefix(l, job.ReviewLine) {
			t = &s.review
		}
		if len(t.lines) == maxReport || t.bytes+len(l) > maxReportBytes {
			s.endedLeft++
			continue
		}
		t.lines = append(t.lines, l)
		t.bytes += len(l)
	}
}

// reportTier is a part of the exit report, and its length in bytes.
type reportTier struct {
	lines []string
	bytes int
}

// endReport is the report for the exit frame: the urgent lines, then the
// plain reviews, within maxReport lines and maxReportBytes, and a last
// line that says how many were left to the audit log.
func (s *supervisor) endReport() []string {
	var out []string
	left, size := s.endedLeft, 0
	for _, l := range append(slices.Clip(s.ended.lines), s.review.lines...) {
		if len(out) == maxReport || size+len(l) > maxReportBytes {
			left++
			continue
		}
		out = append(out, l)
		size += len(l)
	}
	if left > 0 {
		out = append(out, fmt.Sprintf("... and %d more: stockade logs -s %s has every one", left, s.cfg.ID))
	}
	return out
}

// tamperHook returns the tripwire callback when --tripwire is on: log a
// TAMPER event and stop the session.
func (s *supervisor) tamperHook() func(tripwire.Change) {
	if !s.cfg.Tripwire {
		return nil
	}
	return func(c tripwire.Change) {
		s.report().Tamper(c, "stopping the session")
		s.requestStop("tripwire: " + c.String())
	}
}

func stepOf(err error) string {
	var se *sandbox.StepError
	if errors.As(err, &se) {
		return se.Step
	}
	return ""
}

// log records an event. The writer refuses everything after a failed
// write (the chain cannot continue over a half-written line), so a failure
// is reported on the supervisor's own output, once.
func (s *supervisor) log(event string, fields map[string]any) {
	s.logFrom(audit.SourceSupervisor, event, fields)
}

func (s *supervisor) logFrom(source, event string, fields map[string]any) {
	if s.audit == nil {
		return
	}
	if err := s.audit.Log(source, event, fields); err != nil {
		s.auditOnce.Do(func() { fmt.Fprintf(os.Stderr, "stockade supervisor %s: audit log: %v\n", s.cfg.ID, err) })
	}
}

// finish records the end, tells attached clients and closes the socket.
func (s *supervisor) finish(code int, reason string) {
	state := Exited
	switch {
	case reason == "stopped":
		state = Stopped
	case reason != "exited":
		state = Failed
	}
	now := time.Now().UTC()
	s.cfg.Store.Update(s.cfg.ID, func(sess *Session) error {
		sess.State, sess.Ended, sess.ExitCode, sess.Reason, sess.InitPID = state, &now, &code, reason, 0
		return nil
	})
	s.refusedSummary()
	s.log(audit.EventStop, map[string]any{"reason": reason, "status": code, "state": string(state)})
	s.ln.Close()
	os.Remove(s.cfg.Store.Socket(s.cfg.ID))
	s.mu.Lock()
	clients := s.clients
	s.clients = map[*client]struct{}{}
	ended := s.endReport()
	s.mu.Unlock()
	payload, _ := json.Marshal(Exit{Code: code, Reason: reason, Report: ended})
	for c := range clients {
		c.send(FrameExit, payload)
		c.close()
	}
	// The process exits after this: let every client get its exit frame.
	timeout := time.After(2 * time.Second)
	for c := range clients {
		select {
		case <-c.flushed:
		case <-timeout:
			return
		}
	}
}

// refusedSummary records how many connections the proxies refused over
// their caps: counted, not logged one by one.
func (s *supervisor) refusedSummary() {
	logRefused := func(name string, n uint64, max int) {
		if n > 0 {
			s.log(audit.EventWarning, map[string]any{"message": fmt.Sprintf(
				"%s: refused %d connections over its cap of %d", name, n, max)})
		}
	}
	if s.proxy != nil {
		n, max := s.proxy.Refused()
		logRefused("egress proxy", n, max)
	}
	if s.auth != nil {
		n, max := s.auth.Refused()
		logRefused("auth proxy", n, max)
	}
}

// requestStop asks the command to end: SIGTERM to init, which forwards it;
// SIGKILL to init after the grace period takes the whole sandbox down.
func (s *supervisor) requestStop(by string) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.stopping = true
	close(s.stop)
	pid := s.initPID
	s.mu.Unlock()
	s.log(audit.EventSignal, map[string]any{"signal": "SIGTERM", "by": by})
	if pid == 0 || !s.signalInit(pid, unix.SIGTERM) {
		return
	}
	go func() {
		time.Sleep(stopGrace)
		s.mu.Lock()
		still := s.initPID == pid
		s.mu.Unlock()
		if still {
			s.log(audit.EventSignal, map[string]any{"signal": "SIGKILL", "by": "stop grace period"})
			s.signalInit(pid, unix.SIGKILL)
		}
	}()
}

// signalInit sends sig to the init of pid if that run is not over, under
// the lock that ends it: through init's pidfd, so that a run that ends
// meanwhile (its checks can take as long as the command makes them) never
// has the signal reach a process that reused the pid.
func (s *supervisor) signalInit(pid int, sig unix.Signal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initPID != pid {
		return false
	}
	signalInit(s.initFD, pid, sig)
	return true
}

// setMaster takes the master of a newly started command's terminal.
func (s *supervisor) setMaster(m *os.File) error {
	q := newInputQueue()
	s.mu.Lock()
	pumped := make(chan struct{})
	s.master, s.in, s.pumped = m, q, pumped
	rows, cols := s.rows, s.cols
	s.mu.Unlock()
	pty.Setsize(m, &pty.Winsize{Rows: rows, Cols: cols})
	go q.feed(m)
	go func() {
		defer close(pumped)
		s.pump(m)
	}()
	return nil
}

// drainWait bounds the wait for the last output of a run that has ended:
// with every process of the sandbox gone, the terminal's last bytes are
// read, then EIO, at once.
const drainWait = 2 * time.Second

// clearMaster lets the pump read what the ended run wrote last (into the
// transcript and to the clients), then closes the master.
func (s *supervisor) clearMaster() {
	s.mu.Lock()
	m, q, pumped := s.master, s.in, s.pumped
	s.master, s.in, s.pumped = nil, nil, nil
	s.mu.Unlock()
	if q != nil {
		q.close()
	}
	if pumped != nil {
		select {
		case <-pumped:
		case <-time.After(drainWait):
		}
	}
	if m != nil {
		m.Close()
	}
}

// pump copies the terminal's output, filtered unless the policy asks for
// the raw terminal, to the scrollback and every client.
func (s *supervisor) pump(m *os.File) {
	defer s.chargeRelay()()
	buf := make([]byte, 32<<10)
	var filter *termfilter.Filter
	if s.cfg.Job.Policy.Terminal != policy.TerminalRaw {
		filter = &termfilter.Filter{Dropped: s.terminalDropped}
	}
	for {
		n, err := m.Read(buf)
		var out []byte // the clients' own: they send it later
		if filter != nil {
			out = filter.Append(make([]byte, 0, n+64), buf[:n])
		} else {
			out = append(out, buf[:n]...)
		}
		if len(out) > 0 {
			s.record(out)
			s.mu.Lock()
			s.screen.write(out)
			for c := range s.clients {
				if !c.send(FrameOutput, out) {
					delete(s.clients, c)
					c.close()
				}
			}
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// terminalDropped records the first escape sequence of each class that the
// terminal filter drops: the user learns what the command tried, once.
func (s *supervisor) terminalDropped(c termfilter.Class) {
	s.mu.Lock()
	seen := s.dropped[c]
	if s.dropped == nil {
		s.dropped = map[termfilter.Class]bool{}
	}
	s.dropped[c] = true
	s.mu.Unlock()
	if !seen {
		s.log(audit.EventWarning, map[string]any{"message": fmt.Sprintf(
			"terminal: dropped %s from the command's output (--terminal raw passes it)", c)})
	}
}

// resize sets the terminal size; the last client that resized wins.
func (s *supervisor) resize(rows, cols uint16) {
	if rows == 0 || cols == 0 {
		return
	}
	s.mu.Lock()
	s.rows, s.cols = rows, cols
	m := s.master
	s.mu.Unlock()
	if m != nil {
		pty.Setsize(m, &pty.Winsize{Rows: rows, Cols: cols})
	}
}

// input queues b for the command's terminal; it never waits for the
// command to read. It returns true when b was dropped and the client is to
// be told.
func (s *supervisor) input(b []byte) (tell bool) {
	s.mu.Lock()
	q := s.in
	s.mu.Unlock()
	return q != nil && q.push(b)
}

// accept serves the control socket until finish closes it: s.ln retries
// every other error.
func (s *supervisor) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(conn.(*net.UnixConn))
	}
}

// serve answers one control connection.
func (s *supervisor) serve(conn *net.UnixConn) {
	defer conn.Close()
	// The socket sits in a 0700 directory; checking the peer's uid as well
	// costs nothing and survives a loosened directory mode.
	if uid, ok := peerUID(conn); !ok || uid != os.Getuid() {
		writeJSONLine(conn, Response{V: Version, Error: "permission denied: not the session's owner"})
		return
	}
	// A sandboxed process is the owner too (its uid maps to the user's):
	// one that reached a control socket could widen its network policy or
	// type into a session. Only the host's side may ask.
	if nested, err := peerNested(conn); nested {
		why := "the client runs inside a sandbox or another PID namespace"
		if err != nil {
			why = "the client could not be looked at (" + err.Error() + ")"
		}
		writeJSONLine(conn, Response{V: Version, Error: "permission denied: " + why + "; run stockade from your own shell on the host"})
		return
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReaderSize(conn, maxRequest)
	req, err := readRequest(r)
	if err != nil {
		writeJSONLine(conn, Response{V: Version, Error: err.Error()})
		return
	}
	conn.SetReadDeadline(time.Time{})
	sess, _ := s.cfg.Store.Load(s.cfg.ID)
	switch req.Op {
	case OpStatus:
		writeJSONLine(conn, Response{V: Version, OK: true, Session: &sess})
	case OpStop:
		s.requestStop(fmt.Sprintf("stockade stop (pid %d)", peerPID(conn)))
		writeJSONLine(conn, Response{V: Version, OK: true, Session: &sess})
	case OpNetwork:
		rules, err := s.network(req)
		if err != nil {
			writeJSONLine(conn, Response{V: Version, Error: err.Error()})
			return
		}
		writeJSONLine(conn, Response{V: Version, OK: true, Session: &sess, Rules: rules, Network: s.networkView(req.Scope)})
	case OpAttach:
		if err := writeJSONLine(conn, Response{V: Version, OK: true, Session: &sess}); err != nil {
			return
		}
		s.attach(conn, r, req)
	}
}
