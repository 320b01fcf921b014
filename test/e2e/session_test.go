package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type listedSession struct {
	ID         string
	State      string
	Effective  string `json:"effective_state"`
	PID        int
	InitPID    int `json:"init_pid"`
	Restarts   int
	ExitCode   *int `json:"exit_code"`
	Reason     string
	Command    []string
	Foreground bool
}

func (e *env) list(all bool) []listedSession {
	e.t.Helper()
	args := []string{"list", "--json"}
	if all {
		args = append(args, "--all")
	}
	r := e.run("", nil, args...)
	var out []listedSession
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
		e.t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return out
}

func (e *env) session(id string) listedSession {
	e.t.Helper()
	for _, s := range e.list(true) {
		if s.ID == id {
			return s
		}
	}
	e.t.Fatalf("session %s is not listed", id)
	return listedSession{}
}

// stopSessions stops, when the test ends, every session e still runs: a
// test that attaches from a tmux pane leaves its session running when it
// detaches on purpose or fails halfway.
func (e *env) stopSessions() {
	e.t.Cleanup(func() {
		for _, s := range e.list(false) {
			e.run("", nil, "stop", "-s", s.ID)
		}
	})
}

// start runs `stockade run -d` and returns the session ID.
func (e *env) startSession(args ...string) string {
	e.t.Helper()
	r := e.run("", nil, append([]string{"run", "-d", "--log-level", "error", "--"}, args...)...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		e.t.Fatalf("run -d: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	return id
}

// TestSessionsAtOnce: 20 sessions started together are all listed, each in
// its own sandbox, and all stop.
func TestSessionsAtOnce(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = e.startSession("sh", "-c", "echo $STOCKADE_ID > mine-$STOCKADE_ID; ps -e --no-headers | wc -l > procs-$STOCKADE_ID; sleep 1000")
		}()
	}
	wg.Wait()
	listed := map[string]string{}
	for _, s := range e.list(false) {
		listed[s.ID] = s.Effective
	}
	for _, id := range ids {
		if listed[id] != "running" {
			t.Errorf("session %s is %q in list, want running", id, listed[id])
		}
	}
	for _, id := range ids {
		if !waitFor(func() bool { _, err := os.Stat(filepath.Join(e.workdir, "procs-"+id)); return err == nil }) {
			t.Fatalf("session %s never ran its command", id)
		}
		b, _ := os.ReadFile(filepath.Join(e.workdir, "procs-"+id))
		// sh, ps and wc, plus init when it is visible: never the others' processes.
		if procs := strings.TrimSpace(string(b)); procs > "4" || len(procs) > 1 {
			t.Errorf("session %s sees %s processes: the sessions are not isolated", id, procs)
		}
	}
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.run("", nil, "stop", "-s", id); r.code != 0 {
				t.Errorf("stop %s: exit %d %s", id, r.code, r.stderr)
			}
		}()
	}
	wg.Wait()
	for _, s := range e.list(true) {
		if s.Effective != "stopped" {
			t.Errorf("after stop, session %s is %s", s.ID, s.Effective)
		}
	}
}

// TestSupervisorKilled: kill -9 of a supervisor leaves no sandbox process
// alive, list shows the session dead, and a new session still starts.
func TestSupervisorKilled(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sleep", "1000")
	s := e.session(id)
	if s.PID == 0 || s.InitPID == 0 {
		t.Fatalf("session %s: supervisor %d, init %d", id, s.PID, s.InitPID)
	}
	syscall.Kill(s.PID, syscall.SIGKILL)
	if !waitFor(func() bool { return syscall.Kill(s.InitPID, 0) != nil }) {
		t.Fatalf("init %d outlived its supervisor", s.InitPID)
	}
	if got := e.session(id).Effective; got != "dead" {
		t.Errorf("after kill -9, list shows %s, want dead", got)
	}
	r := e.run("", nil, "attach", "-s", id)
	if r.code == 0 || !strings.Contains(r.stderr, "dead") {
		t.Errorf("attach to a dead session: exit %d, %q", r.code, r.stderr)
	}
	id2 := e.startSession("sleep", "1000")
	if e.session(id2).Effective != "running" {
		t.Error("a dead session blocks a new one")
	}
	e.run("", nil, "stop", "-s", id2)
	if r := e.run("", nil, "stop", "-s", id); r.code != 0 || !strings.Contains(r.stdout, "failed") {
		t.Errorf("stop of a dead session: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestCrashRestarts: a command killed by a signal restarts with backoff; an
// exit with a status ends the session with it.
func TestCrashRestarts(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", "echo x >> starts; if [ $(wc -l < starts) -lt 3 ]; then kill -SEGV $$; fi; exit 9")
	if !waitFor(func() bool { return e.session(id).Effective == "exited" }) {
		t.Fatalf("session never ended: %+v", e.session(id))
	}
	s := e.session(id)
	if s.Restarts != 2 || s.ExitCode == nil || *s.ExitCode != 9 {
		t.Errorf("restarts %d, exit %v; want 2 restarts and status 9 (%+v)", s.Restarts, s.ExitCode, s)
	}
}

// TestDeleteAndPrune: delete refuses a running session, removes a stopped
// one; prune removes the rest.
func TestDeleteAndPrune(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sleep", "1000")
	if r := e.run("", nil, "delete", "-s", id[:3]); r.code == 0 || !strings.Contains(r.stderr, "stop it first") {
		t.Errorf("delete of a running session: exit %d %q", r.code, r.stderr)
	}
	e.run("", nil, "stop", "-s", id[:4])
	if r := e.run("", nil, "delete", "-s", id); r.code != 0 {
		t.Errorf("delete: exit %d %q", r.code, r.stderr)
	}
	if len(e.list(true)) != 0 {
		t.Error("a deleted session is still listed")
	}
	if r := e.run("", nil, "attach", "-s", "zzz"); r.code == 0 || !strings.Contains(r.stderr, "no session zzz") {
		t.Errorf("attach -s zzz: exit %d %q", r.code, r.stderr)
	}
	id = e.startSession("true")
	waitFor(func() bool { return e.session(id).Effective == "exited" })
	if r := e.run("", nil, "prune"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("prune: exit %d %q", r.code, r.stdout)
	}
}

// TestAttachDetach: attach shows the session's screen, keys reach it,
// ctrl-] detaches with the session still running, and a re-attach shows
// the screen again.
func TestAttachDetach(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("bash", "-c", `echo "hello from $STOCKADE_ID"; while read -r line; do echo "echo: $line"; done`)
	m := newTmux(t, e, 100, 30, fmt.Sprintf("%s attach -s %s", bin, id))
	m.waitScreen("hello from " + id)
	m.run("send-keys", "first line", "Enter")
	m.waitScreen("echo: first line")
	m.run("send-keys", "C-]")
	m.waitScreen("detached from session " + id)
	m.waitScreen("exit=0")
	if got := e.session(id).Effective; got != "running" {
		t.Fatalf("after detach the session is %s", got)
	}
	m2 := newTmux(t, e, 100, 30, fmt.Sprintf("%s attach -s %s", bin, id))
	m2.waitScreen("echo: first line") // the screen is replayed
	m2.run("send-keys", "second", "Enter")
	m2.waitScreen("echo: second")
	e.run("", nil, "stop", "-s", id)
	m2.waitScreen("exit=143")
	_ = time.Second
}

// TestAuditLog: every session has a hash-chained log that survives delete,
// fails --verify once tampered with, and goes with prune.
func TestAuditLog(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", "sleep 1000")
	e.run("", nil, "stop", "-s", id)
	r := e.run("", nil, "logs", "-s", id)
	for _, want := range []string{"supervisor: session started: sh -c sleep 1000 in " + e.workdir, "signal SIGTERM", "session stopped"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("logs lack %q:\n%s", want, r.stdout)
		}
	}
	if r := e.run("", nil, "logs", "-s", id, "--json"); !strings.HasPrefix(r.stdout, `{"v":1,"seq":1,`) {
		t.Errorf("logs --json: %q", r.stdout)
	}
	if r := e.run("", nil, "logs", "-s", id, "--verify"); r.code != 0 || !strings.Contains(r.stdout, "chain intact") {
		t.Fatalf("verify of an untouched log: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := e.run("", nil, "delete", "-s", id); r.code != 0 {
		t.Fatalf("delete: %s", r.stderr)
	}
	log := filepath.Join(e.home, ".local/state/stockade/audit", id+".jsonl")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the audit log did not survive delete: %v", err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	// The stop signal follows the start, and any warning of the start (the
	// default memory limit, where no cgroup can enforce it).
	n := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"by":"stockade stop`) })
	if n < 1 {
		t.Fatalf("no stop signal after the first line:\n%s", b)
	}
	tampered := strings.Replace(lines[n], `"by":"stockade stop`, `"by":"somebody else`, 1)
	os.WriteFile(log, []byte(strings.Join(lines[:n], "")+tampered+strings.Join(lines[n+1:], "")), 0o600)
	r = e.run("", nil, "logs", "-s", id, "--verify")
	if r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("line %d (seq %d): hash does not match its content", n+1, n+1)) {
		t.Errorf("verify of a tampered log: exit %d %q", r.code, r.stdout)
	}
	os.WriteFile(log, []byte(strings.Join(lines[:n], "")+strings.Join(lines[n+1:], "")), 0o600)
	if r = e.run("", nil, "logs", "-s", id, "--verify"); r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("seq %d was removed", n+1)) {
		t.Errorf("verify of a log with a line removed: exit %d %q", r.code, r.stdout)
	}
	e.run("", nil, "prune")
	if _, err := os.Stat(log); err == nil {
		t.Error("prune left the audit log of a deleted session")
	}
}

// TestTripwire: a protected path created from inside, through the workdir's
// bind mount, stops a --tripwire session, is logged as TAMPER, and is
// removed again at the end; without the flag it is only restored.
func TestTripwire(t *testing.T) {
	requireSandbox(t)
	for _, flag := range []bool{true, false} {
		t.Run(fmt.Sprint("tripwire=", flag), func(t *testing.T) {
			e := newEnv(t)
			planted := filepath.Join(e.workdir, ".github", "hooks", "evil.json")
			args := []string{"run", "-d", "--log-level", "error"}
			if flag {
				args = append(args, "--tripwire")
			}
			args = append(args, "--", "sh", "-c", "mkdir -p .github/hooks && echo evil > .github/hooks/evil.json && echo planted > done; sleep 1000")
			r := e.run("", nil, args...)
			id := strings.TrimSpace(r.stdout)
			if r.code != 0 {
				t.Fatalf("run -d: %s", r.stderr)
			}
			if flag {
				// The tripwire may stop the command before it gets further
				// than the mkdir: wait for the stop, not for the command.
				if !waitFor(func() bool { return e.session(id).Effective == "stopped" }) {
					t.Fatalf("the tripwire did not stop the session: %+v", e.session(id))
				}
			} else {
				if !waitFor(func() bool { _, err := os.Stat(filepath.Join(e.workdir, "done")); return err == nil }) {
					t.Fatal("the command never planted its file")
				}
				if got := e.session(id).Effective; got != "running" {
					t.Fatalf("without --tripwire the session is %s", got)
				}
				e.run("", nil, "stop", "-s", id)
			}
			logs := e.run("", nil, "logs", "-s", id).stdout
			if flag && !strings.Contains(logs, "tripwire: protected path changed: "+filepath.Join(e.workdir, ".github/hooks")+" (created); stopping the session") {
				t.Errorf("no TAMPER stop in the log:\n%s", logs)
			}
			if !strings.Contains(logs, "(created); restored") {
				t.Errorf("no restore in the log:\n%s", logs)
			}
			if _, err := os.Stat(planted); err == nil {
				t.Errorf("%s survived the session", planted)
			}
		})
	}
}

// TestControlSocketBadInput: a malformed request on a session's control
// socket gets one error line and the session carries on.
func TestControlSocketBadInput(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sleep", "1000")
	defer e.run("", nil, "stop", "-s", id)
	sock := filepath.Join(e.home, ".local/state/stockade/sessions", id, "control.sock")
	for _, tt := range []struct{ in, want string }{
		{"not json\n", "not a JSON object"},
		{`{"v":9,"op":"status"}` + "\n", "protocol version 9"},
		{`{"v":1,"op":"explode"}` + "\n", `unknown op \"explode\"`},
		{`{"v":1,"op":"network","action":"allow","target":"bad host!"}` + "\n", `"ok":false`},
	} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(tt.in))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.Contains(line, tt.want) || !strings.Contains(line, `"ok":false`) {
			t.Errorf("%q: answer %q, want an error containing %q", tt.in, line, tt.want)
		}
	}
	if got := e.session(id).Effective; got != "running" {
		t.Errorf("after bad requests the session is %s", got)
	}
}

// TestRacingInvocations: several stockade processes acting on one session
// at once leave its state whole.
func TestRacingInvocations(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sleep", "1000")
	var wg sync.WaitGroup
	res := make([]result, 6)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				res[i] = e.run("", nil, "stop", "-s", id)
			} else {
				res[i] = e.run("", nil, "list", "--all", "--json")
			}
		}()
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Errorf("invocation %d exited %d: %s", i, r.code, r.stderr)
		}
	}
	raw, err := os.ReadFile(filepath.Join(e.home, ".local/state/stockade/sessions", id, "session.json"))
	var s struct{ State string }
	if err != nil || json.Unmarshal(raw, &s) != nil || s.State != "stopped" {
		t.Errorf("session.json after the race: %v %q", err, raw)
	}
}

// TestDetachUnreadInput: a command that never reads its input, and a paste
// of 1 MiB (lines, so that the terminal's buffer fills and a write to it
// blocks): the supervisor queues 64 KiB, drops the rest with a notice, and
// ctrl-] still detaches. Before, its blocking write to the pty stopped it
// reading the client, and the user's terminal stayed stuck in raw mode.
func TestDetachUnreadInput(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", `echo "never reading"; exec sleep 1000`)
	m := newTmux(t, e, 100, 30, fmt.Sprintf("%s attach -s %s", bin, id))
	m.waitScreen("never reading")
	paste := filepath.Join(t.TempDir(), "paste")
	os.WriteFile(paste, []byte(strings.Repeat(strings.Repeat("x", 99)+"\n", 1<<20/100)), 0o644)
	m.run("load-buffer", paste)
	m.run("paste-buffer")
	// The terminal's echo of what was queued before the drop may still be
	// on its way and scroll the notice off the screen.
	m.waitHistory("input dropped")
	m.run("send-keys", "C-]")
	m.waitScreen("detached from session " + id)
	m.waitScreen("exit=0")
	if got := e.session(id).Effective; got != "running" {
		t.Fatalf("after detach the session is %s", got)
	}
	e.run("", nil, "stop", "-s", id)
}

// TestStopSignalBetweenRuns: SIGTERM to a session's supervisor while no
// run's sandbox is there (the backoff before a crashed command's restart)
// stops the session in order, as it does while the command runs; the
// signal relay's default would have killed the supervisor (the session
// listed dead, its control socket left).
func TestStopSignalBetweenRuns(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", "kill -SEGV $$")
	t.Cleanup(func() { e.runBounded(30*time.Second, "", "stop", "-s", id) })
	log := filepath.Join(e.home, ".local/state/stockade/audit", id+".jsonl")
	if !waitFor(func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), `"restart"`) }) {
		t.Fatalf("the crashed command was not restarted; the audit log:\n%s", fileText(log))
	}
	// The first backoff is half a second: the signal lands in it.
	pid := e.session(id).PID
	if pid <= 0 {
		t.Fatalf("session %s lists no supervisor pid", id)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ended := func() bool {
		switch e.session(id).Effective {
		case "starting", "running", "restarting":
			return false
		}
		return true
	}
	if !waitFor(ended) {
		t.Fatalf("session %s is %s 5 s after SIGTERM to its supervisor", id, e.session(id).Effective)
	}
	if got := e.session(id).Effective; got != "stopped" {
		t.Errorf("after SIGTERM between runs the session is %s, want stopped\n%s", got, fileText(log))
	}
	if b := fileText(log); !strings.Contains(b, `"event":"stop"`) {
		t.Errorf("the audit log has no stop event:\n%s", b)
	}
	sock := filepath.Join(e.home, ".local/state/stockade/sessions", id, "control.sock")
	if _, err := os.Stat(sock); err == nil {
		t.Errorf("the control socket %s is left behind", sock)
	}
}

// fileText is the file's text, or why it could not be read.
func fileText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
