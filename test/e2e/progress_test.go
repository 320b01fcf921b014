package e2e

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// runStderrPTY runs stockade with stderr on a new pty (stdin /dev/null,
// stdout a pipe: a foreground run) and returns what the pty and stdout got.
func (e *env) runStderrPTY(vars []string, args ...string) (code int, stderr, stdout string) {
	e.t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		e.t.Fatal(err)
	}
	defer m.Close()
	pty.Setsize(m, &pty.Winsize{Rows: 30, Cols: 120})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = e.workdir, append(append([]string{}, e.vars...), vars...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, s
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	s.Close()
	var tty bytes.Buffer
	io.Copy(&tty, m) // ends with EIO once stockade and its children closed the slave
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			e.t.Fatal(err)
		}
	}
	return code, tty.String(), out.String()
}

// TestProgress: the long steps of a start show on a terminal as one line
// rewritten in place and erased before stockade's next line: an agent's
// sandbox HOME, the container engine of a foreground run and of a
// session. Not on a pipe, not with --log-level error, and never for a
// plain run.
func TestProgress(t *testing.T) {
	requireSandbox(t)
	const erase = "\r\x1b[K"
	e := newEnv(t)
	vars := homeAgent(t, "codex")
	home := erase + "stockade: preparing codex's sandbox HOME…"
	code, tty, out := e.runStderrPTY(vars, headless("codex")...)
	if code != 0 || !strings.Contains(out, "AGENT-RAN") {
		t.Fatalf("stockade codex: exit %d\n%s\n%q", code, out, tty)
	}
	i := strings.Index(tty, home)
	if i < 0 || !strings.HasPrefix(tty[i+len(home):], erase+"stockade: sandbox ") {
		t.Errorf("stderr on a terminal does not show %q, erased before the start line:\n%q", home, tty)
	}
	if r := e.run("", vars, headless("codex")...); strings.Contains(r.stderr, "preparing") || strings.Contains(r.stderr, "\x1b[K") {
		t.Errorf("stderr on a pipe got the progress line:\n%q", r.stderr)
	}
	if _, tty, _ := e.runStderrPTY(vars, append([]string{"codex", "--log-level", "error"}, headless("codex")[1:]...)...); strings.Contains(tty, "preparing") {
		t.Errorf("--log-level error shows the progress line:\n%q", tty)
	}
	if code, tty, _ := e.runStderrPTY(nil, "run", "--", "true"); code != 0 || strings.Contains(tty, "\x1b[K") {
		t.Errorf("a plain run: exit %d, stderr %q", code, tty)
	}

	if _, err := engine.Check(); err != nil {
		testenv.SkipOrFail(t, "no container engine here: %v", err)
	}
	engineLine := erase + "stockade: starting the container engine…"
	code, tty, _ = e.runStderrPTY(nil, "run", "--containers", "--", "true")
	if i := strings.Index(tty, engineLine); code != 0 || i < 0 || !strings.HasPrefix(tty[i+len(engineLine):], erase) {
		t.Errorf("run --containers: exit %d, stderr does not show %q, then erase it:\n%q", code, engineLine, tty)
	}
	// A session's supervisor starts the engine; the line waits for it.
	e.stopSessions()
	engineLine = erase + "stockade: starting the sandbox and its container engine…"
	code, tty, _ = e.runStderrPTY(nil, "run", "-d", "--containers", "--", "sleep", "1000")
	if i := strings.Index(tty, engineLine); code != 0 || i < 0 || !strings.HasPrefix(tty[i+len(engineLine):], erase) {
		t.Errorf("run -d --containers: exit %d, stderr does not show %q, then erase it:\n%q", code, engineLine, tty)
	}
}
