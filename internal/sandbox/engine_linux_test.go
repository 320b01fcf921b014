package sandbox

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestEngineSpec: a spec with Engine has init wait for the supervisor's id
// maps (U) and say when the view is built (V) before the command; the
// namespace counters let the sandbox make namespaces. Without MapIDs the
// start fails with a clear error, not a hang.
func TestEngineSpec(t *testing.T) {
	requireSandbox(t)
	spec, err := NewSpec(Config{
		ID: "engine1", Workdir: t.TempDir(), Home: "/nonexistent-home",
		Argv: []string{"sh", "-c", "cat /proc/self/uid_map /proc/sys/user/max_user_namespaces"},
		Env:  []string{"PATH=/usr/bin:/bin"},
	}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Engine = true
	uid := os.Getuid()
	var mapped, built bool
	outR, outW, _ := os.Pipe()
	defer outR.Close()
	code, err := Run(spec, Options{
		Stdout: outW,
		MapIDs: func(pid int) error {
			mapped = true
			return mapOwnIDs(pid)
		},
		BeforeCommand: func() error { built = true; return nil },
	})
	outW.Close()
	out := make([]byte, 4096)
	n, _ := outR.Read(out)
	if err != nil || code != 0 || !mapped || !built {
		t.Fatalf("Run: code %d, err %v, mapped %v, built %v", code, err, mapped, built)
	}
	lines := strings.Fields(string(out[:n]))
	if len(lines) != 4 || lines[0] != fmt.Sprint(uid) || lines[3] != fmt.Sprint(engineNamespaces) {
		t.Errorf("inside: %q; want the map the supervisor wrote and max_user_namespaces %d", out[:n], engineNamespaces)
	}

	_, err = Run(spec, Options{})
	if err == nil || !strings.Contains(err.Error(), "no MapIDs") {
		t.Errorf("Run without MapIDs: %v", err)
	}
}

// TestEngineQuietAfterReap: with a container engine, the checks after a run
// (OnQuiet) start only once init is reaped. Init's kill(-1) cannot reach the
// engine's processes, which the kernel kills only when it tears down the
// pid namespace as init is reaped: a container left running could otherwise
// write the workdir while the placeholders are released and the checks run
// (test/escape: containers_plant_after_exit). Without an engine, OnQuiet
// comes as init says "quiet", before it is reaped.
func TestEngineQuietAfterReap(t *testing.T) {
	requireSandbox(t)
	for _, engine := range []bool{true, false} {
		spec, err := NewSpec(Config{
			ID: "quiet1", Workdir: t.TempDir(), Home: "/nonexistent-home",
			Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"},
		}, mount.OS{})
		if err != nil {
			t.Fatal(err)
		}
		spec.Engine = engine
		var initPID int
		var reapedAtQuiet, quiet bool
		code, err := Run(spec, Options{
			MapIDs:  mapOwnIDs,
			OnStart: func(pid int) error { initPID = pid; return nil },
			OnQuiet: func() {
				quiet = true
				// A zombie still answers signal 0; a reaped init does not.
				reapedAtQuiet = unix.Kill(initPID, 0) == unix.ESRCH
			},
		})
		if err != nil || code != 0 || !quiet {
			t.Fatalf("engine %v: Run = %d, %v; OnQuiet called: %v", engine, code, err, quiet)
		}
		if reapedAtQuiet != engine {
			t.Errorf("engine %v: init reaped when OnQuiet ran: %v, want %v", engine, reapedAtQuiet, engine)
		}
	}
}

// mapOwnIDs writes init's maps as the supervisor does for an engine, with
// only the user's own ids (what init writes itself without one).
func mapOwnIDs(pid int) error {
	uid, gid := os.Getuid(), os.Getgid()
	for _, f := range []struct{ name, data string }{
		{"uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)},
		{"setgroups", "deny"},
		{"gid_map", fmt.Sprintf("%d %d 1\n", gid, gid)},
	} {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/%s", pid, f.name), []byte(f.data), 0); err != nil {
			return err
		}
	}
	return nil
}
