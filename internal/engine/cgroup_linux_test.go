package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestRemoveTreeLeavesLiveEngine: an engine cgroup whose podman runs in
// its child "init" is another sandbox's live engine. removeTree leaves it
// at once, not after its wait for a cgroup that empties (a --containers
// session beside another took 5 s more to end); an empty tree it removes.
func TestRemoveTreeLeavesLiveEngine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root makes cgroups in the unified hierarchy here; the root pass runs this")
	}
	parent := unifiedCgroup()
	if parent == "" {
		testenv.SkipOrFail(t, "no unified cgroup hierarchy")
	}
	live := filepath.Join(parent, CgroupPrefix+"test-live-"+strconv.Itoa(os.Getpid()))
	empty := filepath.Join(parent, CgroupPrefix+"test-empty-"+strconv.Itoa(os.Getpid()))
	for _, d := range []string{live + "/init", empty + "/init/deeper"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			testenv.SkipOrFail(t, "making a cgroup: %v", err)
		}
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sleep.Process.Kill()
		sleep.Wait()
		removeTree(live)
		removeTree(empty)
	})
	if err := os.WriteFile(live+"/init/cgroup.procs", []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	removeTree(live)
	if d := time.Since(start); d > time.Second {
		t.Errorf("removeTree waited %v on a live engine's cgroup, want at once", d)
	}
	if _, err := os.Stat(live + "/init"); err != nil {
		t.Errorf("the live engine's cgroup: %v", err)
	}
	removeTree(empty)
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("%s after removeTree: %v, want gone", empty, err)
	}
}
