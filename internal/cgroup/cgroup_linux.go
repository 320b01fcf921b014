package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// closeTimeout bounds how long Close waits for killed processes to go.
const closeTimeout = 5 * time.Second

// Probe says which of the limits the current process could enforce, without
// creating anything.
func Probe(l Limits) Report {
	ts, rep := plan(l)
	for _, t := range ts {
		has := func(file string) bool { return t.h.IsTop() || exists(filepath.Join(t.h.Dir, file)) }
		for _, it := range t.items {
			rep.Enforced = append(rep.Enforced, it.line(has))
		}
	}
	return rep
}

// Group is one sandbox's cgroup, made of a directory in each hierarchy that
// enforces one of its limits. It may hold no directory at all when nothing
// could be enforced.
type Group struct {
	mu   sync.Mutex
	dirs []string // created, in order
	// made is every directory created, removed or not: Sweep looks
	// beside them, and a short command's run has often removed its own
	// group (Close) by the time its sweep, in the background, begins.
	made []string
	// placed are the dirs init placed itself in (TaskFiles): Add skips them.
	placed  map[string]bool
	pending []string
	files   []int
	cpu     string // the v1 directory holding the cpu limit, "" without one (JoinCPU)
}

// New creates the group called name (one path element, e.g. "stockade-<id>")
// under the process's own cgroup in each hierarchy needed for l, and writes the
// limits. Limits it cannot enforce are in the report, not errors. If a limit
// write fails, New removes everything it created and returns the error.
func New(name string, l Limits) (*Group, Report, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, Report{}, fmt.Errorf("creating cgroup %q: the name must be one path element", name)
	}
	ts, rep := plan(l)
	return build(name, l, ts, rep)
}

// build carries out a plan: it creates the group in each target and writes the
// limits, rolling everything back if a write fails.
func build(name string, l Limits, ts []*target, rep Report) (*Group, Report, error) {
	g := &Group{}
	var made []*target
	for _, t := range ts {
		dir, err := t.create(name)
		if err != nil {
			rep.NotEnforced = append(rep.NotEnforced, t.problems(err.Error(), fixFor(err))...)
			continue
		}
		g.dirs, made = append(g.dirs, dir), append(made, t)
		g.made = append(g.made, dir)
		if d := cpuDir(t, dir); d != "" {
			g.cpu = d
		}
		has := func(file string) bool { return exists(filepath.Join(dir, file)) }
		for _, it := range t.items {
			if err := writeLimit(dir, it, l, has); err != nil {
				// Everything made so far goes, so nothing is enforced.
				rep.Enforced = nil
				for _, m := range made {
					rep.NotEnforced = append(rep.NotEnforced, m.problems(err.Error(), "report this as a bug, with the kernel version")...)
				}
				return nil, rep, errors.Join(err, g.Close())
			}
		}
		for _, it := range t.items {
			rep.Enforced = append(rep.Enforced, it.line(has))
		}
	}
	return g, rep, nil
}

// create enables t's controllers for children if needed and makes the directory.
// Nothing is left to undo when it fails: a controller it enabled stays enabled,
// as the package documentation says.
func (t *target) create(name string) (string, error) {
	if len(t.enable) > 0 {
		ctl := filepath.Join(t.h.Dir, "cgroup.subtree_control")
		if err := writeFile(ctl, "+"+strings.Join(t.enable, " +")); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(t.h.Dir, name)
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating cgroup %s: %w", dir, os.NewSyscallError("mkdir", err))
	}
	return dir, nil
}

func fixFor(err error) string {
	switch {
	case errors.Is(err, unix.EEXIST):
		return "a sandbox with this name is running, or one crashed and left its cgroup behind: rmdir it"
	case errors.Is(err, unix.EBUSY):
		return "start stockade from a cgroup without processes of its own; stockade does not move itself"
	}
	return fixDelegate
}

// writeLimit writes the files of one limit in dir, skipping optional ones the
// kernel does not have.
func writeLimit(dir string, it item, l Limits, has func(string) bool) error {
	for _, f := range it.spec.Files {
		if f.Optional && !has(f.Name) {
			continue
		}
		if err := writeFile(filepath.Join(dir, f.Name), f.Value(l)); err != nil {
			return fmt.Errorf("setting %s limit %s: %w", it.req.Limit, it.req.Shown, err)
		}
	}
	return nil
}

// writeFile writes one cgroup control file. It is a variable so that tests can
// make a write fail half-way through New.
var writeFile = func(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, path, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, path, err)
	}
	return nil
}

// Paths returns the group's directories, one per hierarchy, for logs and audit.
func (g *Group) Paths() []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.dirs...)
}

// TaskFiles opens the tasks file of each cgroup v1 hierarchy of the
// group, for sandbox.Options.Placer: init writes "0" to each as its first
// act, moving itself (a thread moving itself takes no global lock, where
// moving another process, as Add does, write-locks
// cgroup_threadgroup_rwsem and waits for an RCU grace period: 5 to 15 ms
// at every start). InitPlaced must follow.
func (g *Group) TaskFiles() []int {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.placed = nil // a new init: none is placed yet
	var fds []int
	for _, dir := range g.dirs {
		fd, err := unix.Open(filepath.Join(dir, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // cgroup v2: no tasks file; Add places init
		}
		g.pending, fds = append(g.pending, dir), append(fds, fd)
	}
	g.files = fds
	return fds
}

// InitPlaced closes what TaskFiles opened; given says whether init got
// the files, so that it is in those hierarchies (or died trying), which
// Add then skips.
func (g *Group) InitPlaced(given bool) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, fd := range g.files {
		unix.Close(fd)
	}
	if given {
		if g.placed == nil {
			g.placed = map[string]bool{}
		}
		for _, dir := range g.pending {
			g.placed[dir] = true
		}
	}
	g.pending, g.files = nil, nil
}

// Add moves process pid into the group in every hierarchy. Call it before the
// process runs anything untrusted: until then it is not limited. On error pid
// may be in some of the hierarchies already; Close kills it there.
func (g *Group) Add(pid int) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, dir := range g.dirs {
		if g.placed[dir] {
			continue // init placed itself there (TaskFiles)
		}
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("adding pid %d to cgroup: %w", pid, err)
		}
	}
	return nil
}

// Close kills the processes left in the group and removes its directories.
// Directories it could not remove are kept for the next call; calling it again
// after success does nothing.
func (g *Group) Close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	deadline := time.Now().Add(closeTimeout)
	var errs []error
	var kept []string
	// Children of the last group made are removed first: there are none today,
	// but the order costs nothing.
	for i := len(g.dirs) - 1; i >= 0; i-- {
		dir := g.dirs[i]
		err := evictOwn(dir)
		if err == nil {
			err = killAll(dir, deadline)
		}
		if err == nil {
			err = removeDir(dir, deadline)
		}
		if err != nil {
			errs = append(errs, err)
			kept = append([]string{dir}, kept...)
		}
	}
	g.dirs = kept
	if !slices.Contains(kept, g.cpu) {
		g.cpu = ""
	}
	return errors.Join(errs...)
}

// Sweep removes the groups beside g's, in each hierarchy g has a
// directory in, whose names start with prefix and that stale says were
// left by a stockade that is gone (a supervisor killed with SIGKILL leaves
// its group behind, empty once its sandbox is gone). A group goes only if
// it is empty: nothing is killed, and a group that still holds a process
// stays (rmdir refuses it). It returns the directories it removed.
//
// stale is given each group's name and when it was made (a cgroup
// directory's change time is its creation's): a run's record says when it
// started, and a group made long after is another run's of the same id.
// Sweep works the same once g is closed.
func (g *Group) Sweep(prefix string, stale func(name string, made time.Time) bool) []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	dirs := slices.Clone(g.made)
	g.mu.Unlock()
	var removed []string
	for _, dir := range dirs {
		parent, own := filepath.Split(dir)
		ents, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if name == own || !e.IsDir() || !strings.HasPrefix(name, prefix) {
				continue
			}
			var st unix.Stat_t
			if unix.Lstat(filepath.Join(parent, name), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
				!stale(name, time.Unix(st.Ctim.Unix())) {
				continue
			}
			if unix.Rmdir(filepath.Join(parent, name)) == nil {
				removed = append(removed, filepath.Join(parent, name))
			}
		}
	}
	return removed
}

// killAll kills every process in the cgroup at dir and waits until it is empty.
// cgroup.kill (v2) is atomic against forks; without it, SIGKILLing the pids in
// cgroup.procs again until none remain catches the ones forked meanwhile.
func killAll(dir string, deadline time.Time) error {
	if err := writeFile(filepath.Join(dir, "cgroup.kill"), "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("killing processes in cgroup: %w", err)
	}
	for {
		pids, err := readWords(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed already: Close is being repeated
		}
		if err != nil {
			return fmt.Errorf("listing processes in cgroup: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		var fds []*os.File
		for _, p := range pids {
			pid, err := strconv.Atoi(p)
			if err != nil || pid <= 0 || pid == os.Getpid() {
				continue // never the supervisor, should one of its threads be left here
			}
			_ = unix.Kill(pid, unix.SIGKILL) // ESRCH: gone already
			if fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
				fds = append(fds, os.NewFile(uintptr(fd), "pidfd"))
			}
		}
		if time.Now().After(deadline) {
			closeAll(fds)
			return fmt.Errorf("killing processes in cgroup %s: %d left after %v", dir, len(pids), closeTimeout)
		}
		waitExited(fds, deadline)
	}
}

// waitExited waits until every process of fds (pidfds, closed here) has
// exited, or the deadline: a pidfd polls readable once its process is gone,
// and by then it has left its cgroups. Most often the sandbox's init is
// still tearing its namespaces down when the group is closed, and this
// takes well under a millisecond, where a poll of cgroup.procs would sleep.
// The wait is the runtime poller's (the pidfds are non-blocking), so the
// goroutine waits without its thread holding one of the runtime's Ps: a
// Close that runs beside the checks at the end of a run leaves them both
// cores.
func waitExited(fds []*os.File, deadline time.Time) {
	defer closeAll(fds)
	for _, f := range fds {
		rc, err := f.SyscallConn()
		if err != nil || f.SetReadDeadline(deadline) != nil {
			// Not in the poller (every pidfd is, since Linux 5.3):
			// removeDir waits out EBUSY instead.
			continue
		}
		rc.Read(func(fd uintptr) bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return n > 0 || (err != nil && err != unix.EINTR)
		})
	}
}

func closeAll(fds []*os.File) {
	for _, f := range fds {
		f.Close()
	}
}

// removeDir removes an empty cgroup directory, waiting out EBUSY while killed
// tasks finish leaving it.
func removeDir(dir string, deadline time.Time) error {
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case !errors.Is(err, unix.EBUSY) || time.Now().After(deadline):
			return fmt.Errorf("removing cgroup %s: %w", dir, os.NewSyscallError("rmdir", err))
		}
		time.Sleep(time.Millisecond) // a task killed from outside killAll is still leaving
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
