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
// waiting a little for tasks that are still leaving.
func removeTree(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	for try := 0; ; try++ {
		err := unix.Rmdir(dir)
		if err == nil || !errors.Is(err, unix.EBUSY) || try == 50 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
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
