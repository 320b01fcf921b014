package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// The supervisor does work for the sandbox that the sandbox decides the size
// of: relaying a terminal's output costs it CPU in proportion to what the
// command prints. cgroup v1 places single threads (a TID written to a
// group's tasks file), so one thread of the supervisor can be put in the
// sandbox's cpu group and its CPU counted against the --cpus quota. cgroup
// v2 cannot: a thread may join a group only in threaded mode, which needs
// the group and its siblings in the same threaded subtree as the process's
// other threads, and a domain group (the sandbox's, which holds processes
// and the memory controller) is not one.

// CPUThreads reports whether threads of the caller can join the group's cpu
// limit (JoinCPU): the limit is enforced with cgroup v1.
func (g *Group) CPUThreads() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cpu != ""
}

// JoinCPU moves the calling thread into the group's cgroup v1 cpu group.
// The caller must have locked its goroutine to the thread
// (runtime.LockOSThread) and keep it locked until leave has returned nil;
// leave moves the thread back to where the group was made. A thread that
// exits leaves its groups on its own, and Close moves out any thread of this
// process still in the group, because a group with a task in it cannot be
// removed.
func (g *Group) JoinCPU() (leave func() error, err error) {
	g.mu.Lock()
	dir := g.cpu
	g.mu.Unlock()
	if dir == "" {
		return nil, errors.New("joining the cpu cgroup: the cpu limit is not enforced with cgroup v1")
	}
	// "0" is the writing thread itself (v1 tasks semantics).
	if err := writeFile(filepath.Join(dir, "tasks"), "0"); err != nil {
		return nil, fmt.Errorf("joining cpu cgroup %s: %w", dir, err)
	}
	return func() error {
		if err := writeFile(filepath.Join(filepath.Dir(dir), "tasks"), "0"); err != nil {
			return fmt.Errorf("leaving cpu cgroup %s: %w", dir, err)
		}
		return nil
	}, nil
}

// evictOwn moves the threads of this process out of the v1 group at dir,
// to its parent: Close must not kill them, and rmdir fails while they are
// there.
func evictOwn(dir string) error {
	tids, err := readWords(filepath.Join(dir, "tasks"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("listing threads in cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, t := range tids {
		tid, err := strconv.Atoi(t)
		if err != nil || tid <= 0 || !exists(fmt.Sprintf("/proc/self/task/%d", tid)) {
			continue
		}
		if err := writeFile(filepath.Join(filepath.Dir(dir), "tasks"), t); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("moving thread %d out of cgroup %s: %w", tid, dir, err))
		}
	}
	return errors.Join(errs...)
}

// cpuDir returns dir, t's group, when t is the v1 hierarchy that enforces
// the cpu limit, and "" otherwise.
func cpuDir(t *target, dir string) string {
	if t.h.Version != 1 {
		return ""
	}
	if slices.ContainsFunc(t.items, func(it item) bool { return it.req.Controller == "cpu" }) {
		return dir
	}
	return ""
}
