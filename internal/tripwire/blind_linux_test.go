package tripwire

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// blindChild is set in the re-executed test binary of TestBlindSaysWhy.
const blindChild = "STOCKADE_TRIPWIRE_BLIND_CHILD"

// TestBlindSaysWhy: when no inotify instance is left, Watch's error names
// the errno, the limit's file with its value, and how to raise it (a
// session stopped by a blind tripwire used to give no reason). The user's
// own quota is not touched: the test binary runs again in a user namespace
// of its own whose limit it sets to 0.
func TestBlindSaysWhy(t *testing.T) {
	if os.Getenv(blindChild) == "1" {
		blindChildMain(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBlindSaysWhy$", "-test.v")
	cmd.Env = append(os.Environ(), blindChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(err.Error(), "operation not permitted") && !testenv.MustWork() {
			t.Skipf("no user namespace: %v", err)
		}
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"inotify_init1", "EMFILE", "/proc/sys/user/max_inotify_instances = 0", "sysctl fs.inotify.max_user_instances="} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Watch's error lacks %q:\n%s", want, out)
		}
	}
}

func blindChildMain(t *testing.T) {
	if err := os.WriteFile("/proc/sys/user/max_inotify_instances", []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	s, err := Take([]string{t.TempDir()})
	must(t, err)
	err = s.Watch(context.Background(), func(c Change) { t.Errorf("a change with no watch: %v", c) })
	if err == nil {
		t.Fatal("Watch worked with no inotify instance left")
	}
	t.Logf("Watch: %v", Change{Kind: Blind, Detail: err.Error()})
}
