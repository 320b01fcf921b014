package audit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// onSmallTmpfs runs the test again in a private mount namespace (and a user
// namespace when not root), where body gets a directory on a 1 MiB tmpfs
// that the test can fill.
func onSmallTmpfs(t *testing.T, body func(t *testing.T, dir string)) {
	const child = "STOCKADE_AUDIT_TMPFS_CHILD"
	if os.Getenv(child) == "1" {
		dir := t.TempDir()
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatalf("making the mounts private: %v", err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
			t.Fatalf("mounting a tmpfs: %v", err)
		}
		defer unix.Unmount(dir, unix.MNT_DETACH)
		body(t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), child+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		testenv.SkipOrFail(t, "no private mount namespace: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a private mount namespace: %v\n%s", err, out)
	}
}

// fill writes a file in dir until the filesystem is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}

func connection(i int) map[string]any {
	return map[string]any{"proto": "connect", "host": fmt.Sprintf("host%d.example.com", i), "port": 443,
		"bytes_in": 100, "bytes_out": 200, "duration_ms": 12}
}

// The command fills the disk the log is on, makes traffic, deletes its
// filler: the log ends (and says why) while its reserve still holds the end
// event and the stop, instead of breaking off mid-line.
func TestDiskFullEndsTheLog(t *testing.T) {
	onSmallTmpfs(t, func(t *testing.T, dir string) {
		path := filepath.Join(dir, testSession+".jsonl")
		w, err := OpenLimited(path, testSession, Limits{Reserve: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		w.Log(SourceSupervisor, EventStart, map[string]any{"workdir": dir})
		filler := fill(t, dir)
		var written, refused int
		for i := range 2000 {
			switch err := w.Log(SourceEgress, EventConnection, connection(i)); {
			case err == nil:
				written++
			case errors.Is(err, ErrEnded):
				refused++
			default:
				t.Fatalf("event %d: %v", i, err)
			}
		}
		select {
		case <-w.Ended():
		default:
			t.Fatal("the log did not end on a full disk")
		}
		if r := w.EndReason(); !strings.Contains(r, "no space left on device") {
			t.Errorf("EndReason %q, want it to say the disk is full", r)
		}
		if refused == 0 {
			t.Error("the ended log took every event")
		}
		os.Remove(filler)
		if err := w.Log(SourceSupervisor, EventStop, map[string]any{"reason": "stopped"}); err != nil {
			t.Errorf("the stop event: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		wantVerifies(t, path)
		got := events(t, path)
		if count(got, EventConnection) != written || count(got, EventLogEnd) != 1 {
			t.Errorf("%d connection lines for %d written, %d log_end", count(got, EventConnection), written, count(got, EventLogEnd))
		}
		if strings.Join(got[len(got)-2:], " ") != "stop dropped" {
			t.Errorf("the log ends in %q, want stop, dropped", got[len(got)-2:])
		}
	})
}

// Without a reserve, a write cut off by the full disk is undone: the log
// is cut back to its last whole line, and a gap event takes the lost line's
// seq once there is space again.
func TestCutOffWriteRecovered(t *testing.T) {
	onSmallTmpfs(t, func(t *testing.T, dir string) {
		path := filepath.Join(dir, testSession+".jsonl")
		w, err := OpenLimited(path, testSession, Limits{Reserve: -1})
		if err != nil {
			t.Fatal(err)
		}
		w.Log(SourceSupervisor, EventStart, map[string]any{"workdir": dir})
		filler := fill(t, dir)
		var failed error
		for i := 0; i < 100 && failed == nil; i++ {
			failed = w.Log(SourceEgress, EventConnection, connection(i))
		}
		if failed == nil {
			t.Fatal("100 events fit on a full disk")
		}
		<-w.Ended()
		os.Remove(filler)
		if err := w.Log(SourceSupervisor, EventStop, map[string]any{"reason": "stopped"}); err != nil {
			t.Errorf("the stop event, with space again: %v", err)
		}
		w.Close()
		rep := wantVerifies(t, path)
		if len(rep.Gaps) != 1 {
			t.Errorf("gaps %q, want one", rep.Gaps)
		}
		got := events(t, path)
		if tail := strings.Join(got[len(got)-3:], " "); tail != "gap log_end stop" && tail != "log_end stop dropped" {
			t.Errorf("the log ends in %q, want gap, log_end, stop", tail)
		}
	})
}
