package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitEnded waits, up to a minute, for session id to be over.
func (e *env) waitEnded(id string) listedSession {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := e.session(id)
		switch s.Effective {
		case "exited", "stopped", "failed", "dead":
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("session %s did not end: %+v", id, s)
		}
		time.Sleep(50 * time.Millisecond) // polling the state; nothing signals the end to a bystander
	}
}

// TestSessionOutput: a finished background session's output is kept, and
// `logs --output` prints it (--plain without the escape sequences); attach
// to it says where it is; delete removes it.
func TestSessionOutput(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", `printf '\033[1;31mout\033[0m\n'; printf 'wait\rdone\n'; exit 3`)
	if s := e.waitEnded(id); s.ExitCode == nil || *s.ExitCode != 3 {
		t.Fatalf("the session did not exit with 3: %+v", s)
	}
	if r := e.run("", nil, "attach", "-s", id); r.code == 0 || !strings.Contains(r.stderr, "stockade logs -s "+id+" --output") {
		t.Errorf("attach to an exited session: exit %d %q; want the way to its output", r.code, r.stderr)
	}
	r := e.run("", nil, "logs", "-s", id, "--output")
	if r.code != 0 || !strings.Contains(r.stdout, "\x1b[1;31mout\x1b[0m\r\n") {
		t.Errorf("logs --output: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.run("", nil, "logs", "-s", id, "--output", "--plain"); r.code != 0 || r.stdout != "out\ndone\n" {
		t.Errorf("logs --output --plain: exit %d %q, want %q %s", r.code, r.stdout, "out\ndone\n", r.stderr)
	}
	if r := e.run("", nil, "logs", "-s", id, "--plain"); r.code != 2 || !strings.Contains(r.stderr, "--plain goes with --output") {
		t.Errorf("logs --plain alone: exit %d %q", r.code, r.stderr)
	}
	out := filepath.Join(e.home, ".local/state/stockade/audit", id+".output")
	if _, err := os.Lstat(out); err != nil {
		t.Fatalf("no transcript next to the audit log: %v", err)
	}
	if r := e.run("", nil, "delete", "-s", id); r.code != 0 {
		t.Fatalf("delete: %s", r.stderr)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Error("delete left the session's output")
	}
	if r := e.run("", nil, "logs", "-s", id, "--output"); r.code == 0 || !strings.Contains(r.stderr, "no output kept") {
		t.Errorf("logs --output after delete: exit %d %q", r.code, r.stderr)
	}
}

// TestSessionOutputBound: a command that floods its terminal leaves at most
// two transcript files of 8 MiB each, and the newest output is in them.
func TestSessionOutputBound(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	const limit = 8 << 20
	id := e.startSession("sh", "-c", `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -n 810000; echo THE-END`)
	if s := e.waitEnded(id); s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("the flood did not exit 0: %+v", s)
	}
	dir := filepath.Join(e.home, ".local/state/stockade/audit")
	var total int64
	for _, name := range []string{id + ".output", id + ".output.1"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("after a 30 MB flood: %v", err)
		}
		if fi.Size() > limit {
			t.Errorf("%s holds %d bytes, more than %d", name, fi.Size(), limit)
		}
		total += fi.Size()
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 4 { // the log, its head, two transcript files
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("more files than the log's and two transcript files: %v", names)
	}
	r := e.run("", nil, "logs", "-s", id, "--output", "--plain")
	if int64(len(r.stdout)) > 2*limit || !strings.HasSuffix(r.stdout, "0123456789abcdefghijklmnopqrstuvwxyz\nTHE-END\n") {
		t.Errorf("logs --output --plain: %d bytes, ending %q", len(r.stdout), r.stdout[max(0, len(r.stdout)-80):])
	}
	if total < limit {
		t.Errorf("the transcript holds %d bytes of a 30 MB flood; want the last 8 MiB at least", total)
	}
}

// TestForegroundAudited: a foreground run gets a session ID and an audit
// log like a session, and `list --all` shows it as a foreground run.
func TestForegroundAudited(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	r := e.run("", nil, "run", "--", "sh", "-c", "echo fg; exit 4")
	if r.code != 4 || r.stdout != "fg\n" {
		t.Fatalf("run: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	all := e.list(true)
	if len(all) != 1 {
		t.Fatalf("list --all after one foreground run: %+v", all)
	}
	s := all[0]
	if !s.Foreground || s.Effective != "exited" || s.ExitCode == nil || *s.ExitCode != 4 || !strings.Contains(r.stderr, "sandbox "+s.ID+":") {
		t.Errorf("the foreground run is listed as %+v; its start line: %s", s, r.stderr)
	}
	if r := e.run("", nil, "list", "--all"); !strings.Contains(r.stdout, "exited (4), foreground") {
		t.Errorf("list --all does not show the run as a finished foreground run:\n%s", r.stdout)
	}
	logs := e.run("", nil, "logs", "-s", s.ID).stdout
	for _, want := range []string{"session started: sh -c echo fg; exit 4 in " + e.workdir, "session stopped: exited (exit status 4, state exited)"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the run's audit log lacks %q:\n%s", want, logs)
		}
	}
	if r := e.run("", nil, "logs", "-s", s.ID, "--verify"); r.code != 0 || !strings.Contains(r.stdout, "chain intact") {
		t.Errorf("logs --verify: exit %d %q", r.code, r.stdout)
	}
	var start struct {
		Event      string
		Foreground bool
	}
	first, _, _ := strings.Cut(e.run("", nil, "logs", "-s", s.ID, "--json").stdout, "\n")
	if json.Unmarshal([]byte(first), &start); start.Event != "start" || !start.Foreground {
		t.Errorf("the first event is not a foreground start: %s", first)
	}
	if r := e.run("", nil, "attach", "-s", s.ID); r.code == 0 || !strings.Contains(r.stderr, "a foreground run") {
		t.Errorf("attach to a finished foreground run: exit %d %q", r.code, r.stderr)
	}
}
