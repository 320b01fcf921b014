package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSessionDiskFull: the command fills the disk that the workdir and the
// audit log share (a 6 MiB tmpfs in a private mount namespace), makes
// denied requests while it is full, removes its filler and makes more. The
// log's reserve keeps the trail whole: every denial is logged or counted,
// the stop event is written, and the chain verifies. (Before the reserve,
// the first failed write ended the log mid-line for good.)
func TestSessionDiskFull(t *testing.T) {
	requireSandbox(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("no unshare(1): %v", err)
	}
	args := []string{"-m", "--propagation", "private"}
	if os.Getuid() != 0 {
		args = []string{"-Urm", "--propagation", "private"} // root in a user namespace of its own, to mount
	}
	const denials = 3 + 40 + 5 + 3
	script := `set -eu
R=$(mktemp -d)
mount -t tmpfs -o size=6m tmpfs "$R"
export HOME=$R/home XDG_STATE_HOME=$R/home/.local/state XDG_DATA_HOME=$R/home/.local/share XDG_CONFIG_HOME=$R/home/.config
mkdir -p "$HOME/proj" && cd "$HOME/proj"
id=$("$STOCKADE" run -d --log-level error -- bash -c '
  deny() { for i in $(seq $1); do curl -s -o /dev/null -m 2 -x http://127.0.0.1:3128 https://evil$i.example/ || true; done; }
  deny 3
  dd if=/dev/zero of=fill bs=64k 2>/dev/null || true
  full=$(df --output=avail . | tail -1)
  deny 40; rm -f fill; echo "$full" > avail-when-full; deny 5; sleep 2; deny 3')
for i in $(seq 120); do "$STOCKADE" list | grep -q running || break; sleep 0.25; done
echo "== avail"; cat avail-when-full
echo "== list"; "$STOCKADE" list --all
echo "== logs"; "$STOCKADE" logs -s "$id"
echo "== verify"; "$STOCKADE" logs -s "$id" --verify && echo "verify exit 0" || echo "verify exit $?"
`
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, append(args, "bash", "-c", script)...)
	cmd.Env = append(os.Environ(), "STOCKADE="+bin)
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil {
		t.Fatalf("the scenario failed: %v\n%s", err, s)
	}
	_, rest, _ := strings.Cut(s, "== avail\n")
	avail, rest, _ := strings.Cut(rest, "== list\n")
	if n, err := strconv.Atoi(strings.TrimSpace(avail)); err != nil || n > 64 {
		t.Fatalf("the command did not fill the disk: %q KiB left\n%s", avail, s)
	}
	list, rest, _ := strings.Cut(rest, "== logs\n")
	logs, verify, _ := strings.Cut(rest, "== verify\n")
	if !strings.Contains(list, "exited (0)") {
		t.Errorf("the session did not run to its end:\n%s", list)
	}
	if !strings.Contains(logs, "supervisor: session stopped") {
		t.Errorf("the stop event is missing:\n%s", logs)
	}
	if !strings.Contains(verify, "chain intact") || !strings.Contains(verify, "verify exit 0") {
		t.Errorf("logs --verify:\n%s", verify)
	}
	logged := strings.Count(logs, "network denied:")
	counted := 0
	for _, m := range regexp.MustCompile(`(\d+) more network_denied events`).FindAllStringSubmatch(logs, -1) {
		n, _ := strconv.Atoi(m[1])
		counted += n
	}
	if logged+counted != denials {
		t.Errorf("%d denials logged and %d counted, want %d in all:\n%s", logged, counted, denials, logs)
	}
}

// TestSessionAuditReserveUsedUp: the command fills the disk that the
// workdir and the audit log share (a 6 MiB tmpfs in a private mount
// namespace) and keeps it full, then makes allowed connections, each one an
// unthrottled event, until the log has used the slack of its reserve and
// can reserve no more. The log ends (log_end, "no space"), the proxies
// close at once, so the next connection is refused; the command, which
// ignores SIGTERM, is killed after the grace period; every connection that
// went through is logged; the session ends failed with the reason, which
// list and supervisor.log show although the disk is still full; and the
// chain, end event and stop included, verifies. (On the build before the
// reserve, fc31c92, the log broke off mid-line and 6000 connections went
// through unlogged; before the spare state file, list showed no reason.)
func TestSessionAuditReserveUsedUp(t *testing.T) {
	requireSandbox(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("no unshare(1): %v", err)
	}
	args := []string{"-m", "--propagation", "private"}
	if os.Getuid() != 0 {
		args = []string{"-Urm", "--propagation", "private"}
	}
	// The upstream of the allowed connections: the host's loopback, which
	// the supervisor shares (only the mount namespace is private).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("hello\n"))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// The files the command reports in are written before the disk is
	// full and overwritten in place (1<>), which takes no new space. The
	// command ignores SIGPIPE too: a connection the closing proxy cuts
	// between the connect and the request would otherwise kill it before
	// it reports (CI saw it: no count, and no SIGKILL to log).
	inner := `trap "" TERM PIPE
conn() {
  exec 3<>/dev/tcp/127.0.0.1/3128 || return 1
  printf "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n" >&3
  IFS= read -r -t 5 l <&3 && case $l in *" 200 "*) ;; *) false;; esac || { exec 3>&-; return 1; }
  while IFS= read -r -t 5 l <&3 && [ "${l%$'\r'}" != "" ]; do :; done
  IFS= read -r -t 5 l <&3; exec 3>&-
  [ "$l" = hello ]
}
printf "%64s\n" "" > avail-when-full; printf "%64s\n" "" > conns
dd if=/dev/zero of=fill bs=64k 2>/dev/null || true
df --output=avail . | tail -1 1<> avail-when-full
n=0; while [ $n -lt 6000 ] && conn; do n=$((n+1)); done
echo $n 1<> conns
sleep 60`
	inner = strings.ReplaceAll(inner, "{port}", port)
	script := `set -eu
R=$(mktemp -d)
mount -t tmpfs -o size=6m tmpfs "$R"
export HOME=$R/home XDG_STATE_HOME=$R/home/.local/state XDG_DATA_HOME=$R/home/.local/share XDG_CONFIG_HOME=$R/home/.config
mkdir -p "$HOME/proj" && cd "$HOME/proj"
id=$("$STOCKADE" run -d --log-level error --agent-allow "127.0.0.1:$P" -- bash -c "$INNER")
for i in $(seq 240); do "$STOCKADE" list | grep -q running || break; sleep 0.25; done
echo "== avail"; cat avail-when-full
echo "== conns"; cat conns
echo "== list"; "$STOCKADE" list --all --json
echo "== dir"; ls -la "$XDG_STATE_HOME/stockade/sessions/$id"; cat "$XDG_STATE_HOME/stockade/sessions/$id/session.json"
echo "== supervisor"; cat "$XDG_STATE_HOME/stockade/sessions/$id/supervisor.log" || true
echo "== logs"; "$STOCKADE" logs -s "$id" 2>&1 || echo "logs exit $?"
echo "== verify"; "$STOCKADE" logs -s "$id" --verify && echo "verify exit 0" || echo "verify exit $?"
`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, append(args, "bash", "-c", script)...)
	cmd.Env = append(os.Environ(), "STOCKADE="+bin, "P="+port, "INNER="+inner)
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil {
		t.Fatalf("the scenario failed: %v\n%s", err, tail(s, 8000))
	}
	part := func(name string) string {
		_, rest, _ := strings.Cut(s, "== "+name+"\n")
		v, _, _ := strings.Cut("\n"+rest, "\n== ")
		return v
	}
	if n, err := strconv.Atoi(strings.TrimSpace(part("avail"))); err != nil || n > 64 {
		t.Fatalf("the command did not fill the disk: %q KiB left\n%s", part("avail"), tail(s, 8000))
	}
	conns, _ := strconv.Atoi(strings.TrimSpace(part("conns")))
	logs := part("logs")
	logged := strings.Count(logs, " connection: ")
	t.Logf("%d connections made while the disk was full, %d logged", conns, logged)
	if conns == 0 || logged < conns {
		t.Errorf("%d connections went through and %d were logged: traffic went unrecorded", conns, logged)
	}
	var sessions []struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(part("list")), &sessions); err != nil || len(sessions) != 1 {
		t.Fatalf("list --json: %v\n%s", err, part("list"))
	}
	if got := sessions[0]; got.State != "failed" || !strings.Contains(got.Reason, "audit log ended: no space for the audit log") {
		t.Errorf("the session ended %s (%q), want failed with the audit log's end\n%s", got.State, got.Reason, part("dir"))
	}
	if !strings.Contains(part("supervisor"), "audit log ended: no space for the audit log") {
		t.Errorf("supervisor.log does not say the audit log ended:\n%s", part("supervisor"))
	}
	// In this order: the end, the stop request, the kill after the grace
	// period, the stop. (Connections that ended between the end and the
	// closing of the proxy may come after the end.)
	want := []string{"audit log ended: no space for the audit log", "signal SIGTERM by audit log ended",
		"signal SIGKILL by stop grace period", "session stopped: failed: audit log ended"}
	at := 0
	for _, w := range want {
		i := strings.Index(logs[at:], w)
		if i < 0 {
			t.Fatalf("the log lacks %q after what came before it:\n%s", w, tail(logs, 6000))
		}
		at += i
	}
	if strings.Contains(logs[at:], " connection: ") {
		t.Errorf("a connection was logged after the stop:\n%s", tail(logs, 6000))
	}
	if v := part("verify"); !strings.Contains(v, "chain intact") || !strings.Contains(v, "verify exit 0") ||
		!regexp.MustCompile(`ended at line \d+ \(seq \d+\): audit log ended: no space`).MatchString(v) {
		t.Errorf("logs --verify, want the chain intact and the end named:\n%s", v)
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
