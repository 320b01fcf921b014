//go:build linux

package caps

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("STOCKADE_CAPS_CHILD") == "1" {
		if err := DropAll(); err != nil {
			os.Stdout.WriteString("DropAll: " + err.Error() + "\n")
			os.Exit(1)
		}
		b, _ := os.ReadFile("/proc/self/status")
		os.Stdout.Write(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDropAll drops in a re-executed child (it cannot be undone) and reads
// the child's /proc/self/status.
func TestDropAll(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STOCKADE_CAPS_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := []string{"CapInh", "CapPrm", "CapEff", "CapAmb"}
	if os.Getuid() == 0 {
		// Root holds CAP_SETPCAP, so the bounding set goes too.
		want = append(want, "CapBnd")
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, val, _ := strings.Cut(line, ":")
		for _, w := range want {
			if name == w && strings.TrimSpace(val) != "0000000000000000" {
				t.Errorf("%s = %s after DropAll", name, strings.TrimSpace(val))
			}
		}
	}
	if !strings.Contains(string(out), "CapEff:") {
		t.Fatalf("no capability lines in the child's status:\n%s", out)
	}
}

func TestLastCap(t *testing.T) {
	if n := LastCap(); n < 36 || n > 63 {
		t.Errorf("LastCap() = %d, want a kernel's value (CAP_BLOCK_SUSPEND=36 or later)", n)
	}
}
