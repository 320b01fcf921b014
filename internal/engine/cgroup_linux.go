package engine

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cleanCgroups removes, once they are empty, the cgroups the engine made
// for itself (ownCgroup, CgroupPrefix) and what podman made below them, in
// the supervisor's cgroup of the unified hierarchy and in the groups
// stockade made there. A cgroup with a process in it cannot be removed: an
// engine of another sandbox that still runs keeps its own.
func cleanCgroups() {
	dir := unifiedCgroup()
	if dir == "" {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		switch name := e.Name(); {
		case !e.IsDir():
		case strings.HasPrefix(name, CgroupPrefix):
			removeTree(filepath.Join(dir, name))
		case strings.HasPrefix(name, "stockade-"):
			sub, _ := os.ReadDir(filepath.Join(dir, name))
			for _, s := range sub {
				if s.IsDir() && strings.HasPrefix(s.Name(), CgroupPrefix) {
					removeTree(filepath.Join(dir, name, s.Name()))
				}
			}
		}
	}
}

// removeTree removes the cgroup dir and those below it, deepest first,
// waiting for tasks that are still leaving: the engine's processes die
// with the sandbox's PID namespace, but a cgroup is busy until the last of
// them is released, which on a loaded machine took more than the 100 ms
// this once waited (an engine cgroup left after the run). A cgroup that
// still lists a process, or holds one that does, is another engine's
// (podman runs in a child "init" of the engine's own), and is left at once.
func removeTree(dir string) {
	removeTreeBy(dir, time.Now().Add(removeWait))
}

// removeWait bounds how long removeTree waits for a cgroup to empty.
const removeWait = 5 * time.Second

// removeTreeBy reports whether dir is gone.
func removeTreeBy(dir string, deadline time.Time) bool {
	ents, _ := os.ReadDir(dir)
	kept := false
	for _, e := range ents {
		if e.IsDir() && !removeTreeBy(filepath.Join(dir, e.Name()), deadline) {
			kept = true
		}
	}
	if kept {
		return false // a live cgroup below: dir cannot be removed either
	}
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := unix.Rmdir(dir)
		switch {
		case err == nil || errors.Is(err, unix.ENOENT):
			return true
		case !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) || holdsProcesses(dir):
			return false // a process in it: an engine of another sandbox, which keeps its own
		}
		time.Sleep(pause)
	}
}

// holdsProcesses reports whether the cgroup dir lists a process. An
// engine's processes have all exited once its sandbox's init is reaped
// (the PID namespace ends with it); its cgroup may stay busy a little
// longer while the kernel releases them.
func holdsProcesses(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// unifiedCgroup is the directory of this process's cgroup in the unified
// (v2) hierarchy, "" when there is none mounted.
func unifiedCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var rel string
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 && fields[3] == "/" {
				return filepath.Join(fields[4], rel)
			}
		}
	}
	return ""
}
