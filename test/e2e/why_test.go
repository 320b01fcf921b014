package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// deniedLine is the line a denied CONNECT to HOST:443 leaves, in the
// sandbox's denials file and in stockade why, with the command that allows
// it: in a session, a network command (id set); in a foreground run, the
// flag of the next run.
func deniedLine(id, host string) *regexp.Regexp { return denialLine(id, "connect", host, 443) }

// denialLine is the line of a connection to host:port that proto (connect,
// capture) refused in deny mode.
func denialLine(id, proto, host string, port int) *regexp.Regexp {
	fix := "stockade run --agent-allow " + host + " … (again: a foreground run's rules are fixed while it runs)"
	if id != "" {
		fix = "stockade network agent allow -s " + id + " " + host
	}
	return regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ` + proto + ` ` + regexp.QuoteMeta(host) +
		`:` + strconv.Itoa(port) + ` \| rule: deny mode \| not in the allowlist \(deny mode\) \| allow: ` + regexp.QuoteMeta(fix) + "$")
}

// TestWhyForeground: a CONNECT the proxy refuses (curl only says "CONNECT
// tunnel failed, response 403") leaves a line in /run/stockade/denials,
// which the command can read and not write; stockade why shows it after
// the run. The file lives only in the sandbox: the run makes nothing of
// it on the host.
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
	noDenialsOnHost(t, e, id)
}

// TestWhyCapture: a direct connection, made with the proxy variables
// unset, is captured; when it is denied the program sees only a reset,
// so the denial must be a line in /run/stockade/denials and in stockade
// why, named as the capture named it: raw TCP by its address, TLS by the
// server name it sent (to an allowed name's address).
func TestWhyCapture(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	e := newEnv(t)
	script := noProxy + echo("198.51.100.20", 7) + "; getent hosts allowed.test >/dev/null; " +
		curl("-k --resolve other.test:443:198.51.100.10 https://other.test/") + "\necho ---; cat /run/stockade/denials"
	r := e.run("", nil, "run", "--log-level", "error", "--resolver", testnetDNS, "--agent-allow", "allowed.test", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	seen, inside, _ := strings.Cut(r.stdout, "---\n")
	if got := strings.Fields(seen); len(got) < 2 || got[0] != "ECONNRESET" || got[1] != "EXIT35" {
		t.Fatalf("the captured connections were not reset (want ECONNRESET, then curl's EXIT35):\n%s", r.stdout)
	}
	raw, tls := denialLine("", "capture", "198.51.100.20", 7), denialLine("", "capture", "other.test", 443)
	if !raw.MatchString(inside) || !tls.MatchString(inside) {
		t.Errorf("the denials file inside lacks the captured denials:\n%s", inside)
	}
	runs := e.list(true)
	if len(runs) != 1 {
		t.Fatalf("list --all: %+v", runs)
	}
	id := runs[0].ID
	w := e.run("", nil, "why", "-s", id)
	if w.code != 0 || !raw.MatchString(w.stdout) || !tls.MatchString(w.stdout) {
		t.Errorf("why lacks the captured denials: exit %d\n%s%s", w.code, w.stdout, w.stderr)
	}
	if w := e.run("", nil, "why", "-s", id, "--json"); !strings.Contains(w.stdout, `"proto":"capture","host":"198.51.100.20","port":7,`) {
		t.Errorf("why --json lacks proto capture:\n%s", w.stdout)
	}
	noDenialsOnHost(t, e, id)
}

// noDenialsOnHost checks that the state directory holds nothing of run
// id's but its session record and audit log (and the placeholders' stash,
// which is no run's): no denials file, nor its directory.
func noDenialsOnHost(t *testing.T, e *env, id string) {
	t.Helper()
	state := filepath.Join(e.home, ".local/state/stockade")
	if _, err := os.Lstat(filepath.Join(state, "denials")); !os.IsNotExist(err) {
		t.Errorf("the run made the host directory of denials files: %v", err)
	}
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(state, p)
		switch {
		case err != nil:
			t.Errorf("walking the state directory: %v", err)
		case strings.Contains(strings.ToLower(rel), "denial"):
			t.Errorf("the run left %s on the host", p)
		case d.IsDir() || strings.HasPrefix(rel, "placeholders/"),
			strings.HasPrefix(rel, "sessions/"+id+"/"), strings.HasPrefix(rel, "audit/"+id+"."):
		default:
			t.Errorf("the run left %s on the host, which is neither its session record nor its audit log", p)
		}
		return nil
	})
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
	noDenialsOnHost(t, e, id)
	// The file an earlier stockade kept on the host, left by a killed
	// supervisor, goes with prune, and its directory with it.
	left := filepath.Join(e.home, ".local/state/stockade/denials", id)
	os.MkdirAll(filepath.Dir(left), 0o700)
	os.WriteFile(left, []byte("left\n"), 0o644)
	if r := e.run("", nil, "prune"); r.code != 0 {
		t.Fatalf("prune: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Dir(left)); !os.IsNotExist(err) {
		t.Errorf("prune left the old denials file or its directory: %v", err)
	}
}

// TestWhyRestart: a session's command started again after a crash runs in
// a new sandbox with a new denials file, which holds the denials of the
// earlier start.
func TestWhyRestart(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sh", "-c", `if [ ! -e started ]; then
  touch started; curl -s -o /dev/null https://denied.example/; kill -SEGV $$
fi
for i in $(seq 100); do grep -q denied.example /run/stockade/denials && break; sleep 0.1; done
cp /run/stockade/denials inside.txt; exec sleep 60`)
	defer e.run("", nil, "stop", "-s", id)
	if !waitFor(func() bool {
		b, _ := os.ReadFile(filepath.Join(e.workdir, "inside.txt"))
		return deniedLine(id, "denied.example").Match(b)
	}) {
		b, _ := os.ReadFile(filepath.Join(e.workdir, "inside.txt"))
		t.Fatalf("the restarted command's file (session %+v):\n%s", e.session(id), b)
	}
	if s := e.session(id); s.Restarts != 1 {
		t.Errorf("restarts %d, want 1", s.Restarts)
	}
	e.run("", nil, "stop", "-s", id)
	noDenialsOnHost(t, e, id)
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
