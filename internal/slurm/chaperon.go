package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/accept"
	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/egress"
)

// Audit events of the chaperon (source audit.SourceSlurm).
const (
	EventSubmit  = audit.EventSlurmSubmit
	EventRefused = audit.EventSlurmRefused
	EventCancel  = audit.EventSlurmCancel
	EventControl = audit.EventSlurmControl
)

// readTimeout bounds how long a connection may take to send its request;
// maxConns bounds the connections served at once (each holds up to
// MaxRequest while it is read, and an srun holds one until its job ends).
// A connection past it gets an error reply.
const (
	readTimeout = 30 * time.Second
	maxConns    = 64
)

// Chaperon answers the Slurm shims of one sandbox.
type Chaperon struct {
	cfg    Config
	event  func(event string, fields map[string]any)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	seq    atomic.Int64
	mu     sync.Mutex
	lns    []net.Listener
	conns  map[net.Conn]bool // open connections, closed by Close
	rules  *egress.Rules     // the session's egress rules (SetRules)
	cap    *accept.Cap
	// compLoc is the cluster's JobCompLoc, read once (sacct.go).
	compOnce sync.Once
	compLoc  string
	// trusted checks the real commands (lookPath); a test replaces it.
	trusted func(path string) error
}

// New makes the chaperon of a session; event hears its audit events.
func New(cfg Config, event func(string, map[string]any)) (*Chaperon, error) {
	if event == nil {
		event = func(string, map[string]any) {}
	}
	if err := os.MkdirAll(filepath.Join(cfg.State, "jobs"), 0o700); err != nil {
		return nil, fmt.Errorf("making the Slurm chaperon's directory: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Chaperon{cfg: cfg, event: event, ctx: ctx, cancel: cancel, cap: accept.NewCap(maxConns, nil)}
	c.trusted = func(p string) error { return Trusted(p, cfg.Writable) }
	return c, nil
}

// MakeState makes the chaperon's directory dir (0700) if it is missing,
// and checks it is a directory of its own, not a link: a session's tree
// that holds it masks it (cli), so it is made before any sandbox runs.
func MakeState(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// Serve answers connections on ln until Close. Its accept loop outlives
// a temporary error (package accept), and at most maxConns connections
// are served at once, over every listener.
func (c *Chaperon) Serve(ln net.Listener) {
	ln = c.cap.Listen(ln, func(conn net.Conn) {
		writeFrame(conn, Reply{Code: 1, Stderr: fmt.Appendf(nil, "slurm: error: stockade's Slurm chaperon is serving %d requests already; wait for one to end\n", maxConns)})
	})
	c.mu.Lock()
	if c.ctx.Err() != nil { // closed already
		c.mu.Unlock()
		ln.Close()
		return
	}
	c.lns = append(c.lns, ln)
	c.mu.Unlock()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.ctx.Err() != nil {
			c.mu.Unlock()
			conn.Close()
			return
		}
		if c.conns == nil {
			c.conns = map[net.Conn]bool{}
		}
		c.conns[conn] = true
		c.wg.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.wg.Done()
			defer func() {
				c.mu.Lock()
				delete(c.conns, conn)
				c.mu.Unlock()
				conn.Close()
			}()
			c.serveConn(conn)
		}()
	}
}

// Close stops serving, kills the real commands still running (srun,
// sbatch --wait) and waits for the connections to end. Jobs already in
// the queue stay there: each runs under stockade run.
func (c *Chaperon) Close() {
	c.mu.Lock()
	c.cancel()
	for _, ln := range c.lns {
		ln.Close()
	}
	for conn := range c.conns {
		conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *Chaperon) serveConn(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(readTimeout))
	var req Request
	if err := readFrame(conn, &req, MaxRequest); err != nil {
		writeFrame(conn, Reply{Code: 1, Stderr: []byte("stockade: the Slurm chaperon could not read the request: " + err.Error() + "\n")})
		return
	}
	conn.SetReadDeadline(time.Time{})
	// A running srun's output goes to the shim as it is written, a frame
	// at a time: a shim that does not read holds srun's pipe full (srun
	// waits, as on a terminal that does not scroll), never a buffer here.
	// The shim sends nothing more: when it hangs up (killed, Ctrl-C), gone
	// is closed, and a running srun ends its job, as the real srun killed
	// would.
	var mu sync.Mutex
	var broken bool
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn)
		close(gone)
	}()
	sh := &shim{gone: gone, write: func(stdout, stderr []byte) {
		mu.Lock()
		defer mu.Unlock()
		if !broken && writeFrame(conn, Reply{Stdout: stdout, Stderr: stderr, More: true}) != nil {
			broken = true // the shim is gone: the rest of the output is dropped
		}
	}}
	var rep Reply
	func() {
		defer func() {
			if r := recover(); r != nil {
				rep = Reply{Code: 1, Stderr: fmt.Appendf(nil, "%s: error: stockade's Slurm chaperon failed on this request: %v\n", req.Command, r)}
			}
		}()
		rep = c.answerTo(req, sh)
	}()
	mu.Lock()
	defer mu.Unlock()
	writeFrame(conn, rep)
}

// shim is the shim a request came from, for a command that runs as long
// as its job: write hears the command's output as it is written, gone is
// closed when the shim hangs up.
type shim struct {
	write func(stdout, stderr []byte)
	gone  <-chan struct{}
}

// refusal is a request the chaperon will not pass on.
type refusal struct{ reason string }

func (r refusal) Error() string { return r.reason }

func refuse(format string, args ...any) error { return refusal{fmt.Sprintf(format, args...)} }

// Answer answers one request, with all of its output in the reply.
func (c *Chaperon) Answer(req Request) Reply { return c.answerTo(req, nil) }

// answerTo answers one request; the output of a command that runs as long
// as its job (srun; sbatch --wait's job line) goes to sh as it is
// written, when sh is set.
func (c *Chaperon) answerTo(req Request, sh *shim) Reply {
	rep, err := c.answer(req, sh)
	var r refusal
	if errors.As(err, &r) {
		c.event(EventRefused, map[string]any{"command": req.Command, "args": req.Args, "reason": r.reason})
		return Reply{Code: 1, Stderr: fmt.Appendf(nil, "%s: error: refused by stockade: %s\n", safeName(req.Command), r.reason)}
	}
	if err != nil {
		return Reply{Code: 1, Stderr: fmt.Appendf(nil, "%s: error: %v\n", safeName(req.Command), err)}
	}
	return rep
}

// safeName is the command's name for a message: one of Commands, or a
// placeholder (the name came from the sandbox).
func safeName(name string) string {
	for _, c := range Commands {
		if c == name {
			return c
		}
	}
	return "slurm"
}

func (c *Chaperon) answer(req Request, sh *shim) (Reply, error) {
	for _, a := range append([]string{req.Cwd}, req.Args...) {
		if strings.ContainsRune(a, 0) {
			return Reply{}, refuse("an argument holds a NUL byte, which no command line can carry")
		}
	}
	if c.cfg.Step != "" {
		return c.step(req, sh)
	}
	switch req.Command {
	case "sbatch":
		return c.sbatch(req, sh)
	case "srun":
		return c.srun(req, sh)
	case "salloc":
		return Reply{}, refuse("salloc opens an allocation outside the sandbox; submit a script with sbatch, or run a command with srun")
	case "squeue":
		return c.squeue(req)
	case "sacct":
		return c.sacct(req)
	case "scancel":
		return c.scancel(req)
	case "scontrol":
		return c.scontrol(req)
	case "sinfo":
		return c.sinfo(req)
	case "sacctmgr":
		return c.sacctmgr(req)
	}
	return Reply{}, refuse("%q is not a Slurm command stockade answers (%s)", req.Command, strings.Join(Commands, ", "))
}

// queryTimeout bounds a real command that should answer at once: a
// query, a control, a submission that does not wait. A hung one (an
// option that repeats, a controller that does not answer) costs the
// session a connection for that long, not for good.
const queryTimeout = 2 * time.Minute

// real runs the real Slurm command with the chaperon's environment, in
// the chaperon's directory, for at most queryTimeout, and returns what
// it printed and its status.
func (c *Chaperon) real(name string, args ...string) Reply {
	ctx, cancel := context.WithTimeout(c.ctx, queryTimeout)
	defer cancel()
	return c.runReal(ctx, nil, nil, name, args...)
}

// realWait is real without the time limit: srun lasts as long as its
// job, or until the session ends. With sh, its output goes to the shim
// as it is written, and it is ended (SIGTERM: srun ends its job) when the
// shim hangs up.
func (c *Chaperon) realWait(sh *shim, name string, args ...string) Reply {
	if sh == nil || sh.gone == nil {
		return c.runReal(c.ctx, nil, sh, name, args...)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-sh.gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	return c.runReal(ctx, nil, sh, name, args...)
}

// hangupWait is how long an srun whose shim hung up has to end its job
// (srun waits up to 32 s for its tasks) before it is killed.
const hangupWait = 45 * time.Second

// runReal runs a real command; firstLine, when set, hears the first line
// of its output as soon as it is written (sbatch --parsable --wait prints
// the job's id, then waits for the job); sh, when set, hears all of its
// output as it is written, and the reply holds none. When ctx ends before
// the session does (the shim hung up), the command gets SIGTERM first.
func (c *Chaperon) runReal(ctx context.Context, firstLine func(string), sh *shim, name string, args ...string) Reply {
	return c.runRealIn(ctx, nil, firstLine, sh, name, args...)
}

// runRealIn is runReal with stdin as the command's standard input.
func (c *Chaperon) runRealIn(ctx context.Context, stdin io.Reader, firstLine func(string), sh *shim, name string, args ...string) Reply {
	bin, err := c.lookPath(name)
	if err != nil {
		return Reply{Code: 1, Stderr: fmt.Appendf(nil, "%s: error: the real %s: %v\n", name, name, err)}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = c.cfg.Env
	cmd.Dir = c.cfg.State
	cmd.Stdin = stdin
	cmd.Cancel = func() error {
		if c.ctx.Err() == nil && ctx.Err() == context.Canceled {
			return cmd.Process.Signal(syscall.SIGTERM)
		}
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = hangupWait
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = limited(&out), limited(&errb)
	if sh != nil {
		cmd.Stdout = streamWriter(func(p []byte) { sh.write(p, nil) })
		cmd.Stderr = streamWriter(func(p []byte) { sh.write(nil, p) })
	}
	if firstLine != nil {
		cmd.Stdout = &lineWatcher{w: cmd.Stdout, fn: firstLine}
	}
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if code < 0 {
			code = 1
		}
	case err != nil:
		return Reply{Code: 1, Stderr: fmt.Appendf(nil, "%s: error: running the real %s: %v\n", name, name, err)}
	}
	return Reply{Stdout: out.Bytes(), Stderr: errb.Bytes(), Code: code}
}

// systemPath is where the real Slurm commands are looked for when the
// chaperon's environment has no PATH.
const systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// lookPath finds a real Slurm command on the PATH of the chaperon's
// environment, in a directory the sandbox cannot have planted it in
// (c.trusted). It runs on the host, outside every sandbox, so a PATH entry
// the agent can write (a venv's bin, a --rw tree, the project) is passed
// over: otherwise the agent's own sinfo would run here at its next sinfo.
func (c *Chaperon) lookPath(name string) (string, error) {
	path := systemPath
	for _, kv := range c.cfg.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	var passed []string
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		if err := c.trusted(real); err != nil {
			passed = append(passed, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		return real, nil
	}
	if len(passed) > 0 {
		return "", fmt.Errorf("stockade runs no %s that the sandbox or another user could have written, and passed over %s; install Slurm where only root can write (e.g. /usr/bin)", name, strings.Join(passed, ", "))
	}
	return "", fmt.Errorf("%s is not on the PATH %s", name, path)
}

// Trusted checks that a program at the canonical path p is safe to run
// outside the sandbox, where a sandbox could not have planted or
// rewritten it: the file and every directory above it are root's and
// writable by no one else (a sticky directory such as /tmp may be: none
// but root can rename or remove the root's entry in it), and none of them
// is a tree the sandbox can write (writable; as root, the project is
// root's).
func Trusted(p string, writable []string) error {
	for _, w := range writable {
		if w = filepath.Clean(w); p == w || strings.HasPrefix(p, strings.TrimSuffix(w, "/")+"/") {
			return fmt.Errorf("in %s, which the sandbox can write", w)
		}
	}
	for q := p; ; q = filepath.Dir(q) {
		var st unix.Stat_t
		if err := unix.Lstat(q, &st); err != nil {
			return err
		}
		if st.Uid != 0 {
			return fmt.Errorf("%s is not root's", q)
		}
		sticky := q != p && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0
		if st.Mode&0o022 != 0 && !sticky {
			return fmt.Errorf("%s is writable by others than root", q)
		}
		if q == "/" {
			return nil
		}
	}
}

// lineWatcher passes writes on and calls fn once with the first line.
type lineWatcher struct {
	w    io.Writer
	line []byte
	fn   func(string)
}

func (l *lineWatcher) Write(p []byte) (int, error) {
	if l.fn != nil {
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			l.line = append(l.line, p[:i]...)
			l.fn(string(l.line))
			l.fn, l.line = nil, nil
		} else if len(l.line) < 4096 {
			l.line = append(l.line, p...)
		}
	}
	return l.w.Write(p)
}

// streamWriter passes each write on as it comes (exec's copy reads at
// most 32 KiB at a time, well within a frame).
type streamWriter func([]byte)

func (w streamWriter) Write(p []byte) (int, error) {
	w(p)
	return len(p), nil
}

// limitedWriter keeps at most half a frame of a command's output.
type limitedWriter struct{ b *bytes.Buffer }

func limited(b *bytes.Buffer) limitedWriter { return limitedWriter{b} }

func (w limitedWriter) Write(p []byte) (int, error) {
	if room := MaxFrame/4 - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// within reports whether p is dir or below it; both clean and absolute.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
