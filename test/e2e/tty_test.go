package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// tmux drives stockade on a real terminal: a detached tmux server of the
// test's own (its own socket), a pane of known size, send-keys to type and
// capture-pane to read the screen.
type tmux struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T, e *env, width, height int, shell string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		testenv.SkipOrFail(t, "tmux is not installed")
	}
	m := &tmux{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	script := filepath.Join(t.TempDir(), "start.sh")
	env := strings.Join(e.vars, " ")
	// The shell outlives the command and prints its exit status: no need to
	// rely on how tmux reports a dead pane.
	os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\ncd %s && env -i %s TERM=xterm %s\necho \"exit=$?\"\nexec sleep 1000\n", e.workdir, env, shell)), 0o755)
	m.run("new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), script)
	t.Cleanup(func() { exec.Command("tmux", "-S", m.socket, "kill-server").Run() })
	return m
}

func (m *tmux) run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", m.socket}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// waitScreen polls the pane until it contains want: a terminal has no other
// readiness signal to wait on.
func (m *tmux) waitScreen(want string) string {
	m.t.Helper()
	return m.wait(want, "capture-pane", "-p")
}

// waitHistory is waitScreen over the pane's scrollback too: for a line
// that later output may scroll off the screen before the poll sees it.
func (m *tmux) waitHistory(want string) string {
	m.t.Helper()
	return m.wait(want, "capture-pane", "-p", "-S", "-")
}

func (m *tmux) wait(want string, capture ...string) string {
	m.t.Helper()
	var screen string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		screen = m.run(capture...)
		if strings.Contains(screen, want) {
			return screen
		}
	}
	m.t.Fatalf("screen never showed %q:\n%s", want, screen)
	return ""
}

// TestTerminal: on a terminal the command gets a fresh pty of the sandbox's
// own devpts, the pane's size, keystrokes, window resizes, and ^C.
func TestTerminal(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	e.write("t.sh", `echo "tty=$(tty)"; while read -r line; do
		[ "$line" = stop ] && { echo sleeping; exec sleep 1000; }
		echo "size=$(stty size) line=$line"
	done`)
	m := newTmux(t, e, 100, 30, bin+" run --log-level error -- bash t.sh")
	screen := m.waitScreen("tty=")
	if !strings.Contains(screen, "tty=/dev/pts/0") {
		t.Errorf("the command's terminal is not a fresh pty of its own devpts:\n%s", screen)
	}
	m.run("send-keys", "hello sandbox", "Enter")
	m.waitScreen("size=30 100 line=hello sandbox")
	// The new size travels by SIGWINCH, the keys by the relay: type until
	// a line reports the new size.
	m.run("resize-window", "-x", "120", "-y", "40")
	resized := false
	for i := 0; i < 100 && !resized; i++ {
		m.run("send-keys", fmt.Sprintf("r%d", i), "Enter")
		line := fmt.Sprintf("line=r%d", i)
		screen = m.waitScreen(line)
		resized = strings.Contains(screen, "size=40 120 "+line)
	}
	if !resized {
		t.Fatalf("the pty never took the new window size:\n%s", screen)
	}
	// ^C goes to a plain sleep: bash's own handling of SIGINT while it
	// reaps a child that exited normally would make the test flaky.
	m.run("send-keys", "stop", "Enter")
	m.waitScreen("sleeping")
	m.run("send-keys", "C-c")
	m.waitScreen("exit=130")
}
