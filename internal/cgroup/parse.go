package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
)

// mountEntry is one cgroup or cgroup2 line of /proc/self/mountinfo.
type mountEntry struct {
	Type  string   // "cgroup" (v1) or "cgroup2"
	Root  string   // the directory of the hierarchy that is mounted: "/" unless bind-mounted
	Point string   // where it is mounted
	Super []string // super-block options; for v1 they name the controllers ("cpu", "name=systemd")
}

// parseMountinfo returns the cgroup mounts in a /proc/<pid>/mountinfo file
// (proc(5)): "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE SOURCE SUPER".
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var ms []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		before, after, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(before), strings.Fields(after)
		if !ok || len(f) < 6 || len(g) < 3 {
			return nil, fmt.Errorf("parsing mountinfo line %d: %q is not ID PARENT DEV ROOT POINT OPTS - TYPE SOURCE SUPER", n, sc.Text())
		}
		if g[0] != "cgroup" && g[0] != "cgroup2" {
			continue
		}
		ms = append(ms, mountEntry{Type: g[0], Root: unescapeOctal(f[3]), Point: unescapeOctal(f[4]), Super: strings.Split(g[2], ",")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	return ms, nil
}

// unescapeOctal undoes the kernel's \ooo escaping of space, tab, newline and
// backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procEntry is one line of /proc/<pid>/cgroup: "ID:CONTROLLERS:PATH". The v2
// line is "0::PATH".
type procEntry struct {
	ID          int
	Controllers []string // nil for v2
	Path        string   // relative to the cgroup namespace root
}

// parseProcCgroup parses a /proc/<pid>/cgroup file (cgroups(7)).
func parseProcCgroup(r io.Reader) ([]procEntry, error) {
	var es []procEntry
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		if sc.Text() == "" {
			continue
		}
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("parsing /proc/self/cgroup line %d: %q is not ID:CONTROLLERS:PATH", n, sc.Text())
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("parsing /proc/self/cgroup line %d: %w", n, err)
		}
		e := procEntry{ID: id, Path: f[2]}
		if f[1] != "" {
			e.Controllers = strings.Split(f[1], ",")
		}
		es = append(es, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	return es, nil
}

// hierarchy is one mounted cgroup hierarchy and the process's place in it.
type hierarchy struct {
	Version     int
	Controllers []string // v1: bound controllers; v2: nil, read cgroup.controllers
	Mount       string   // mount point
	Dir         string   // the process's current cgroup; "" when Lost
	Lost        string   // why Dir is unknown, for the report
}

// IsTop reports whether Dir is the top of what is mounted, where the per-group
// control files (pids.max, memory.max) may be missing.
func (h *hierarchy) IsTop() bool { return h.Dir == h.Mount }

// layout is every cgroup hierarchy the process can see.
type layout struct {
	V1 []hierarchy
	V2 *hierarchy // nil when no cgroup2 is mounted
}

// resolve matches the process's cgroups to the mounts that show them.
func resolve(mounts []mountEntry, procs []procEntry) layout {
	var l layout
	for _, p := range procs {
		if p.ID == 0 {
			if h := locate(2, nil, p.Path, mounts); h != nil && l.V2 == nil {
				l.V2 = h
			}
			continue
		}
		if h := locate(1, p.Controllers, p.Path, mounts); h != nil {
			l.V1 = append(l.V1, *h)
		}
	}
	return l
}

// locate finds the mount of the hierarchy with the given version and
// controllers, and the directory of cgroupPath in it. It returns nil when the
// hierarchy is not mounted at all.
func locate(version int, controllers []string, cgroupPath string, mounts []mountEntry) *hierarchy {
	var found *hierarchy
	for _, m := range mounts {
		if (version == 2) != (m.Type == "cgroup2") || !containsAll(m.Super, controllers) {
			continue
		}
		h := &hierarchy{Version: version, Controllers: controllers, Mount: m.Point}
		if version == 1 {
			h.Controllers = slices.DeleteFunc(slices.Clone(controllers), func(c string) bool { return strings.HasPrefix(c, "name=") })
		}
		rel, ok := within(m.Root, cgroupPath)
		if ok {
			h.Dir = path.Join(m.Point, rel)
			return h
		}
		if found == nil {
			h.Lost = fmt.Sprintf("this process's cgroup %s is outside the part %s of the hierarchy mounted at %s", cgroupPath, m.Root, m.Point)
			found = h
		}
	}
	return found
}

// within returns p relative to root, if p is root or below it.
func within(root, p string) (string, bool) {
	if root == "/" {
		return p, strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "/..")
	}
	if p == root {
		return "/", true
	}
	rest, ok := strings.CutPrefix(p, root+"/")
	return "/" + rest, ok
}

func containsAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// find returns the hierarchy that provides controller: its v1 hierarchy if it
// has one, else cgroup2 (which may lack it; the caller reads cgroup.controllers).
func (l layout) find(controller string) *hierarchy {
	for i := range l.V1 {
		if slices.Contains(l.V1[i].Controllers, controller) {
			return &l.V1[i]
		}
	}
	return l.V2
}
