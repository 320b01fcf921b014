package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBounded runs stockade like run, under a shell that first applies
// prefix (such as a lowered descriptor limit), and reports a hang as a
// failure instead of waiting for the 60 s of run.
func (e *env) runBounded(bound time.Duration, prefix string, args ...string) (result, time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", prefix + `exec "$@"`, "sh", bin}, args...)...)
	cmd.Dir = e.workdir
	cmd.Env = e.vars
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		e.t.Errorf("stockade %q hung: no answer within %s", args, bound)
		return result{-1, stdout.String(), stderr.String()}, took
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running stockade %q: %v", args, err)
	}
	return result{code, stdout.String(), stderr.String()}, took
}

// waitFile waits up to bound for a file the command writes in the workdir.
func (e *env) waitFile(name string, bound time.Duration) bool {
	p := filepath.Join(e.workdir, name)
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// exhaustScript holds more connections to the egress proxy than the
// supervisor has descriptors (three holders of 120, under a limit of
// 256), probes the proxy while they are held and once they are released.
const exhaustScript = `
hold() {
	for i in $(seq 1 120); do exec {fd}<>/dev/tcp/127.0.0.1/3128 || break; done
	touch held-$1
	while [ ! -e release ]; do sleep 0.1; done
}
probe() {
	exec {p}<>/dev/tcp/127.0.0.1/3128 || return
	printf 'CONNECT denied.example:443 HTTP/1.1\r\nHost: denied.example:443\r\n\r\n' >&$p
	timeout 5 head -c 400 <&$p > $1.tmp
	exec {p}>&-
	mv $1.tmp $1
}
hold 1 & hold 2 & hold 3 &
while [ ! -e held-1 ] || [ ! -e held-2 ] || [ ! -e held-3 ]; do sleep 0.1; done
sleep 1.5 # the refusals of the burst are done
probe during
wait
probe after
sleep 1000
`

// TestSupervisorOutOfDescriptors: a command that opens more connections to
// the egress proxy than its supervisor has descriptors is refused over the
// cap with a clear answer; the control socket answers meanwhile; once the
// connections are released the proxy serves again; and stop works.
func TestSupervisorOutOfDescriptors(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	const lowered = "ulimit -n 256 && " // the caps are 32 connections each
	r, _ := e.runBounded(60*time.Second, lowered, "run", "-d", "--log-level", "error", "--", "bash", "-c", exhaustScript)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("run -d: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { e.runBounded(30*time.Second, "", "stop", "-s", id) })
	for _, f := range []string{"held-1", "held-2", "held-3"} {
		if !e.waitFile(f, 30*time.Second) {
			t.Fatalf("the command never held its connections (%s)", f)
		}
	}

	r, took := e.runBounded(20*time.Second, "", "network", "list", "-s", id)
	t.Logf("network list while 360 connections are held: exit %d in %v", r.code, took.Round(time.Millisecond))
	if r.code != 0 {
		t.Errorf("network list while the connections are held: exit %d %q, want an answer", r.code, r.stderr)
	}
	if !e.waitFile("during", 30*time.Second) {
		t.Fatal("the probe while the connections are held never finished")
	}
	if b, _ := os.ReadFile(filepath.Join(e.workdir, "during")); !strings.Contains(string(b), "503") || !strings.Contains(string(b), "cap of 32 connections") {
		t.Errorf("a connection over the cap got %q, want a 503 naming the cap", b)
	}

	os.WriteFile(filepath.Join(e.workdir, "release"), nil, 0o644)
	if !e.waitFile("after", 30*time.Second) {
		t.Fatal("the probe after the release never finished")
	}
	if b, _ := os.ReadFile(filepath.Join(e.workdir, "after")); !strings.Contains(string(b), "403") {
		t.Errorf("after the release the proxy answered %q, want its 403 for a denied name", b)
	}
	r, took = e.runBounded(20*time.Second, "", "network", "list", "-s", id)
	t.Logf("network list after the release: exit %d in %v", r.code, took.Round(time.Millisecond))
	if r.code != 0 {
		t.Errorf("network list after the release: exit %d %q", r.code, r.stderr)
	}
	r, took = e.runBounded(30*time.Second, "", "stop", "-s", id)
	t.Logf("stop: exit %d in %v", r.code, took.Round(time.Millisecond))
	if r.code != 0 || !strings.Contains(r.stdout, "stopped") {
		t.Errorf("stop: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	audit, _ := os.ReadFile(filepath.Join(e.home, ".local/state/stockade/audit", id+".jsonl"))
	if !bytes.Contains(audit, []byte("connections over its cap of 32")) {
		t.Errorf("the audit log has no count of the refused connections:\n%s", audit)
	}
}

// TestStopUnresponsiveControl: with a control socket that accepts nothing,
// network fails fast naming the fix, and stop ends the session through the
// supervisor's pidfd.
func TestStopUnresponsiveControl(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sleep", "1000")
	t.Cleanup(func() { e.runBounded(30*time.Second, "", "stop", "-s", id) })
	sock := filepath.Join(e.home, ".local/state/stockade/sessions", id, "control.sock")
	if err := os.Rename(sock, sock+".real"); err != nil {
		t.Fatal(err)
	}
	deaf, err := net.Listen("unix", sock) // never accepts: connects land in its backlog
	if err != nil {
		t.Fatal(err)
	}
	defer deaf.Close()

	for _, args := range [][]string{{"network", "list", "-s", id}, {"attach", "-s", id}} {
		r, took := e.runBounded(20*time.Second, "", args...)
		t.Logf("%s, deaf socket: exit %d in %v: %s", args[0], r.code, took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
		if r.code == 0 || !strings.Contains(r.stderr, "session "+id) || !strings.Contains(r.stderr, "stockade stop -s "+id) {
			t.Errorf("%s, deaf socket: exit %d %q, want an error naming the session and the fix", args[0], r.code, r.stderr)
		}
	}
	r, took := e.runBounded(30*time.Second, "", "stop", "-s", id)
	t.Logf("stop, deaf socket: exit %d in %v: %s", r.code, took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
	if r.code != 0 || !strings.Contains(r.stdout, id+" stopped") || !strings.Contains(r.stderr, "SIGTERM") {
		t.Errorf("stop, deaf socket: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got := e.session(id).Effective; got != "stopped" {
		t.Errorf("after stop the session is %s, want stopped", got)
	}
}
