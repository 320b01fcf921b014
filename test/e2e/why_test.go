package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// deniedLine is the line a denied CONNECT to HOST:443 leaves, in the
// sandbox's denials file and in stockade why, with the command that allows
// it: in a session, a network command (id set); in a foreground run, the
// flag of the next run.
func deniedLine(id, host string) *regexp.Regexp {
	fix := "stockade run --agent-allow " + host + " … (again: a foreground run's rules are fixed while it runs)"
	if id != "" {
		fix = "stockade network agent allow -s " + id + " " + host
	}
	return regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ connect ` + regexp.QuoteMeta(host) +
		`:443 \| rule: deny mode \| not in the allowlist \(deny mode\) \| allow: ` + regexp.QuoteMeta(fix) + "$")
}

// TestWhyForeground: a CONNECT the proxy refuses (curl only says "CONNECT
// tunnel failed, response 403") leaves a line in /run/stockade/denials,
// which the command can read and not write; stockade why shows it after
// the run, and the host file is gone.
func TestWhyForeground(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	script := `curl -sS https://denied.example/ 2>&1; echo "env=$STOCKADE_DENIALS"; cat /run/stockade/denials
[ -w /run/stockade/denials ] && echo WRITABLE; echo forged >>/run/stockade/denials 2>/dev/null && echo WROTE; true`
	r := e.run("", nil, "run", "--log-level", "error", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	runs := e.list(true)
	if len(runs) != 1 {
		t.Fatalf("list --all: %+v", runs)
	}
	id := runs[0].ID
	if !strings.Contains(r.stdout, "CONNECT tunnel failed, response 403") || !deniedLine("", "denied.example").MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "env=/run/stockade/denials") {
		t.Errorf("the denial is not in the file inside:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "WRITABLE") || strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "forged") {
		t.Errorf("the command could write the denials file:\n%s", r.stdout)
	}
	w := e.run("", nil, "why", "-s", id)
	if w.code != 0 || !deniedLine("", "denied.example").MatchString(w.stdout) || !strings.Contains(w.stdout, "session "+id+": 1 denials") {
		t.Errorf("why: exit %d\n%s%s", w.code, w.stdout, w.stderr)
	}
	ents, _ := os.ReadDir(filepath.Join(e.home, ".local/state/stockade/denials"))
	if len(ents) != 0 {
		t.Errorf("the run left its denials file on the host: %v", ents)
	}
}

// TestWhySession: in a session the host's stockade why shows a denial
// while the session runs, and after it ended; the file inside holds it
// too, and a DNS name refused by the stub is a line as well.
func TestWhySession(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", `curl -s -o /dev/null https://denied.example/; getent hosts refused.example;
cp /run/stockade/denials inside.txt; exec sleep 60`)
	defer e.run("", nil, "stop", "-s", id)
	var w result
	if !waitFor(func() bool {
		w = e.run("", nil, "why", "-s", id)
		return strings.Contains(w.stdout, "dns refused.example")
	}) {
		t.Fatalf("why of a running session: exit %d\n%s%s", w.code, w.stdout, w.stderr)
	}
	if !deniedLine(id, "denied.example").MatchString(w.stdout) {
		t.Errorf("why lacks the CONNECT:\n%s", w.stdout)
	}
	if !waitFor(func() bool {
		b, _ := os.ReadFile(filepath.Join(e.workdir, "inside.txt"))
		return strings.Contains(string(b), "dns refused.example")
	}) {
		b, _ := os.ReadFile(filepath.Join(e.workdir, "inside.txt"))
		t.Errorf("the file inside:\n%s", b)
	}
	e.run("", nil, "stop", "-s", id)
	if w := e.run("", nil, "why", "-s", id, "--json"); w.code != 0 || strings.Count(w.stdout, "\n") < 2 ||
		!strings.Contains(w.stdout, `"host":"denied.example","port":443,"rule":"deny mode"`) {
		t.Errorf("why --json of an ended session: exit %d\n%s%s", w.code, w.stdout, w.stderr)
	}
	if w := e.run("", nil, "why", "-s", "nosuch"); w.code == 0 || !strings.Contains(w.stderr, "nosuch") {
		t.Errorf("why of no session: exit %d\n%s", w.code, w.stderr)
	}
	// The session removed its file when it ended; one a killed supervisor
	// left goes with prune.
	left := filepath.Join(e.home, ".local/state/stockade/denials", id)
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Errorf("the ended session left its denials file: %v", err)
	}
	os.WriteFile(left, []byte("left\n"), 0o644)
	if r := e.run("", nil, "prune"); r.code != 0 {
		t.Fatalf("prune: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Errorf("prune left the denials file: %v", err)
	}
}

// TestWhyBounded: however many denials the command provokes, the file
// keeps the newest 50 to 100 of them; why has them all.
func TestWhyBounded(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	const n = 300
	script := fmt.Sprintf(`python3 -c 'import socket
for i in range(%d):
    s = socket.create_connection(("127.0.0.1", 3128), 5)
    s.sendall(b"CONNECT h%%d.example:443 HTTP/1.1\r\nHost: h%%d.example:443\r\n\r\n" %% (i, i))
    assert s.recv(12).startswith(b"HTTP/1.1 403"), i
    s.close()'
wc -l </run/stockade/denials; wc -c </run/stockade/denials; tail -n 1 /run/stockade/denials`, n)
	r := e.run("", nil, "run", "--log-level", "error", "--", "sh", "-c", script)
	out := strings.Split(r.stdout, "\n")
	if r.code != 0 || len(out) < 3 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var lines, bytes int
	fmt.Sscan(out[0], &lines)
	fmt.Sscan(out[1], &bytes)
	const header = 3
	if lines < 50+header || lines > 100+header || bytes > 100*300 {
		t.Errorf("after %d denials the file holds %d lines, %d bytes", n, lines, bytes)
	}
	if !strings.Contains(out[2], fmt.Sprintf(" h%d.example:443 ", n-1)) {
		t.Errorf("the newest line is %q", out[2])
	}
	id := e.list(true)[0].ID
	w := e.run("", nil, "why", "-s", id, "-n", "0", "--json")
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(w.stdout), "\n") {
		var d struct{ Host string }
		json.Unmarshal([]byte(l), &d)
		seen[d.Host] = true
	}
	all := e.run("", nil, "why", "-s", id, "-n", "0")
	// The audit log writes a burst of denials and counts the rest.
	var written, more int
	fmt.Sscanf(all.stdout, "session "+id+": %d denials", &written)
	if i := strings.Index(all.stdout, "\nand "); i >= 0 {
		fmt.Sscanf(all.stdout[i+1:], "and %d more", &more)
	}
	if written != len(seen) || written+more != n {
		t.Errorf("why: %d written (%d hosts in --json), %d counted, want %d in all\n%s", written, len(seen), more, n, all.stdout)
	}
}
