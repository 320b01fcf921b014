//go:build linux

package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCountersCoverKernel: every per-user-namespace counter this kernel has
// is in the table, so a counter added by a newer kernel is a decision, not
// an oversight.
func TestCountersCoverKernel(t *testing.T) {
	ents, err := os.ReadDir(userCounterDir)
	if err != nil {
		t.Skipf("no %s: %v", userCounterDir, err)
	}
	known := map[string]bool{}
	for _, c := range counters {
		if known[c.name] || c.why == "" || c.share < 0 || (c.share == 0 && c.fixed < 0) {
			t.Errorf("counter %s: duplicate, no reason, or a negative limit", c.name)
		}
		known[c.name] = true
	}
	for _, e := range ents {
		if !known[e.Name()] {
			t.Errorf("%s%s is not in the counters table", userCounterDir, e.Name())
		}
	}
}

// TestCountersLowered: inside the sandbox, each counter reads the table's
// limit, lower than the user's on the host, and the kernel enforces it: the
// command cannot take more inotify instances than its share.
func TestCountersLowered(t *testing.T) {
	requireSandbox(t)
	lims, err := sandboxCounters()
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	for _, l := range lims {
		script.WriteString("cat " + l.path + "\n")
	}
	r := run(t, "", "sh", "-c", script.String())
	if r.code != 0 || r.err != nil {
		t.Fatalf("status %d err %v stderr %q", r.code, r.err, r.stderr)
	}
	got := strings.Fields(r.stdout)
	if len(got) != len(lims) {
		t.Fatalf("read %q, want %d values", r.stdout, len(lims))
	}
	for i, l := range lims {
		host, _ := os.ReadFile(l.path)
		h, _ := strconv.ParseInt(strings.TrimSpace(string(host)), 10, 64)
		if got[i] != strconv.FormatInt(l.value, 10) || l.value > h || (h > 3 && l.value >= h) {
			t.Errorf("%s reads %s in the sandbox (want %d; the user's is %d)", l.path, got[i], l.value, h)
		}
	}
}

// TestCounterStepError: a limit init cannot lower is a StepError that names
// the file, the value and the errno.
func TestCounterStepError(t *testing.T) {
	host, err := hostFacts()
	if err != nil {
		t.Fatal(err)
	}
	if len(host.counters) == 0 {
		t.Skip("this kernel has no per-user-namespace counters")
	}
	se := (&program{}).stepError(Spec{}, nil, stepCounters, 0, unix.EROFS)
	l := host.counters[0]
	if se.Step != "user limits" || se.Path != l.path || se.Errno != "EROFS" || !strings.Contains(se.Msg, strconv.FormatInt(l.value, 10)) {
		t.Fatalf("got %#v; want step \"user limits\", path %s, EROFS and the value %d", se, l.path, l.value)
	}
}
