//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The kernel counts inotify instances and watches, fanotify groups and
// marks, and namespaces per user and per user namespace (the ucounts of
// kernel/ucount.c). A count is hierarchical: inc_ucount charges the
// sandbox's user namespace and every ancestor, the host's included, and
// fails when any of them is at its limit. The sandbox's processes run as
// the user, so without a limit of their own they use up the user's quota on
// the host: with all 128 inotify instances taken by the sandbox, the user's
// editor, tail -f, stockade logs -f and a --tripwire started meanwhile all
// fail. A new user namespace starts with every limit at INT_MAX; init, which
// holds CAP_SYS_RESOURCE in it until the capability drop, lowers them while
// /proc/sys is still writable (before its mounts), and the command can never
// raise them again (no capability, /proc/sys read-only inside). Because the
// count is hierarchical, the sandbox's own limit bounds what it takes from
// the user's.
//
// Counters that are not per user namespace stay shared with the user (see
// docs/sandbox.md): the pipe buffer pages of fs.pipe-user-pages-soft/hard
// are counted per user across the whole system.

// counter is one file of /proc/sys/user and the limit a sandbox gets.
type counter struct {
	name string
	// share is the fraction of the host's limit the sandbox may take, as
	// 1/share; fixed is used instead when share is 0.
	share int
	fixed int
	// left: not lowered (init itself needs it), only listed.
	left bool
	// engine, when not 0, is the limit of a sandbox that holds a
	// container engine (Spec.Engine): the engine's user namespace and each
	// container's namespaces are made in the sandbox's.
	engine int
	why    string
}

// counters is the table of every per-user-namespace limit init lowers. A
// file the kernel does not have (an older kernel) is skipped.
var counters = []counter{
	{name: "max_inotify_instances", share: 4, why: "editors' watchers, tail -f, stockade logs -f and --tripwire need the user's instances (128 by default)"},
	{name: "max_inotify_watches", share: 4, why: "the user's editors and --tripwire watch a directory each"},
	{name: "max_fanotify_groups", fixed: 0, why: "seccomp refuses fanotify_init"},
	{name: "max_fanotify_marks", fixed: 0, why: "seccomp refuses fanotify_init: marks need a group"},
	{name: "max_user_namespaces", fixed: 0, engine: engineNamespaces, why: "seccomp refuses new namespaces"},
	{name: "max_mnt_namespaces", left: true, why: "init's mounts need it (every open_tree clone is an anonymous mount namespace, charged here); seccomp refuses open_tree and new namespaces to the command"},
	{name: "max_pid_namespaces", fixed: 0, engine: engineNamespaces, why: "seccomp refuses new namespaces"},
	{name: "max_net_namespaces", fixed: 0, engine: engineNamespaces, why: "seccomp refuses new namespaces"},
	{name: "max_ipc_namespaces", fixed: 0, engine: engineNamespaces, why: "seccomp refuses new namespaces"},
	{name: "max_uts_namespaces", fixed: 0, engine: engineNamespaces, why: "seccomp refuses new namespaces"},
	{name: "max_time_namespaces", fixed: 0, why: "seccomp refuses new namespaces"},
	{name: "max_cgroup_namespaces", fixed: 1, engine: engineNamespaces, why: "init makes one after its limits are set; seccomp refuses more"},
}

// engineNamespaces bounds each kind of namespace of a sandbox with a
// container engine: a container takes one of each.
const engineNamespaces = 512

// userCounterDir is where the counters of the reader's user namespace are.
const userCounterDir = "/proc/sys/user/"

// counterLimit is one limit init writes.
type counterLimit struct {
	path   string
	value  int64
	engine int64 // the value with a container engine (counter.engine)
}

// sandboxCounters returns what init writes for each counter this kernel
// has. Only a share needs the host's limit (that of the supervisor's user
// namespace): a fixed limit above the host's takes nothing the host's does
// not refuse anyway, since the count is charged to both. (A sysctl read
// costs a dozen microseconds; one directory read finds which exist.)
func sandboxCounters() ([]counterLimit, error) {
	names, err := readDirNames(userCounterDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the user's limits: %w", err)
	}
	var out []counterLimit
	for _, c := range counters {
		if c.left || !slices.Contains(names, c.name) {
			continue
		}
		path := userCounterDir + c.name
		v := int64(c.fixed)
		if c.share > 0 {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("reading the user's limit: %w", err)
			}
			host, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("reading the user's limit %s: %q is not a number", path, b)
			}
			v = host / int64(c.share)
		}
		e := v
		if c.engine != 0 {
			e = int64(c.engine)
		}
		out = append(out, counterLimit{path: path, value: v, engine: e})
	}
	return out, nil
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// counterError explains a limit init could not lower.
func counterError(lims []counterLimit, idx int, err error) string {
	if idx < 0 || idx >= len(lims) {
		return fmt.Sprintf("lowering the sandbox's per-user limits in /proc/sys/user: %v", err)
	}
	l := lims[idx]
	return fmt.Sprintf("lowering the sandbox's limit %s to %d: %v; stockade needs a writable /proc/sys in a new user namespace (is /proc/sys mounted read-only, as in a container?)", l.path, l.value, err)
}
