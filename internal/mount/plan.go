// Package mount builds the sandbox's filesystem view (docs/sandbox.md, "Filesystem view"): a plan, made
// on the host from the policy, that lists every mount of the new root in order;
// and an executor that carries the plan out inside the new mount namespace and
// pivots into it.
//
// The plan is data so that it can be printed, tested without privileges, and
// sent to the sandbox init over a pipe. Paths in a plan are sandbox paths
// (targets) and host paths (sources); the executor reaches host paths through
// the old root, which it detaches before the agent starts.
//
// Read-only binds are made read-only recursively with mount_setattr(2); every
// mount carries nosuid and nodev except the device nodes themselves.
package mount

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
)

// Kind says what a Mount entry does.
type Kind string

const (
	Bind    Kind = "bind"    // bind Source at Target (recursive)
	Tmpfs   Kind = "tmpfs"   // a fresh tmpfs at Target; Data holds its options
	Proc    Kind = "proc"    // a fresh procfs for the new PID namespace
	Devpts  Kind = "devpts"  // a new devpts instance
	Symlink Kind = "symlink" // a symlink at Target pointing to Source
	Dir     Kind = "dir"     // a directory at Target (inside a tmpfs of the plan)
	Empty   Kind = "empty"   // mask: an empty read-only file or directory at Target
	Device  Kind = "device"  // bind the host device node Source at Target
	File    Kind = "file"    // a read-only file with content Data at Target
	// Feed is a read-only file at Target, empty at first, that the
	// supervisor writes: init makes it in a tmpfs of its own, which the
	// sandbox never sees, and hands the supervisor a write-only
	// descriptor of it. A plan holds at most one (Plan.Feed).
	Feed Kind = "feed"
)

// Mount is one step of the plan.
type Mount struct {
	Kind     Kind   `json:"kind"`
	Source   string `json:"source,omitempty"` // host path, or link text for Symlink
	Target   string `json:"target"`           // sandbox path
	ReadOnly bool   `json:"ro,omitempty"`
	Data     string `json:"data,omitempty"`
	IsDir    bool   `json:"dir,omitempty"`  // Empty: mask a directory; Bind: source is a directory
	Mode     uint32 `json:"mode,omitempty"` // Dir: permission bits
	Why      string `json:"why,omitempty"`  // which policy rule asked for it
	// Link: the source is a symlink, bound (or masked) itself.
	Link bool `json:"link,omitempty"`
	// Strict: the path lies in a tree the sandbox can write or the user
	// named; the executor resolves it with no symlink in any component.
	Strict bool `json:"strict,omitempty"`
	// Held: the target is a placeholder the supervisor makes while init
	// starts; init makes no step of this mount before it exists.
	Held bool `json:"held,omitempty"`
}

// Plan is the ordered list of mounts that makes the new root.
type Plan struct {
	Mounts []Mount `json:"mounts"`
	// Store is a host directory that is never mounted in the view: init
	// clones it (no symlink in any component), nosuid and nodev, and
	// hands the supervisor the detached mount (CallKeepTree), which only
	// the container engine's mount namespace receives. "": none.
	Store string `json:"store,omitempty"`
	// StoreDev and StoreIno identify the directory the supervisor locked
	// (engine.OpenStore): init clones Store only if it is still that one
	// (else ESTALE), so that a directory renamed into its place meanwhile,
	// which no lock holds, is never the engine's. 0: not checked.
	StoreDev uint64 `json:"store_dev,omitempty"`
	StoreIno uint64 `json:"store_ino,omitempty"`
}

// Feed is the plan's Feed mount, if it has one.
func (p Plan) Feed() (Mount, bool) {
	for _, m := range p.Mounts {
		if m.Kind == Feed {
			return m, true
		}
	}
	return Mount{}, false
}

// depth orders targets so that a parent is always mounted before its children.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(filepath.Clean(p), "/")
}

// sortMounts orders the plan parent-first, and by target within a depth, so
// that the plan does not depend on the order the scan found things in;
// mounts of one target keep their order.
func sortMounts(ms []Mount) {
	// Sorted by key, then moved once: a Mount is large to swap, and a
	// depth is worth computing once per target (a plan holds about a
	// hundred mounts, and this runs on every start).
	type key struct {
		depth  int
		target string
		i      int
	}
	keys := make([]key, len(ms))
	for i, m := range ms {
		keys[i] = key{depth(m.Target), m.Target, i}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.depth, b.depth), strings.Compare(a.target, b.target))
	})
	sorted := make([]Mount, len(ms))
	for i, k := range keys {
		sorted[i] = ms[k.i]
	}
	copy(ms, sorted)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	// No dir+"/": the steps ask this of every pair of mounts.
	return p == dir || len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}
