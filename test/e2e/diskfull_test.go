package e2e

import (
	"context"
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
echo "== verify"; "$STOCKADE" logs -s "$id" --verify; echo "verify exit $?"
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
