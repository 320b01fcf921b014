package ocihook

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// evalSymlinks resolves a bind's source as the checks do (tests replace
// it).
var evalSymlinks = filepath.EvalSymlinks

// CheckBuildMounts refuses a build step's bind whose source, as the
// runtime will find it, is not one of the build's own trees: its context,
// buildah's run and cache directories (all below the engine's TMPDIR,
// f.Tmp), an image's or a stage's layer in the storage, a container's own
// files there (a build secret), or the engine's /sys, which buildah binds
// read-only into every step.
//
// buildah joins a RUN --mount=type=bind source onto the context or a
// stage's root and mounts it first at a directory of its own, following a
// symbolic link in it (CVE-2024-1753: source=link with link -> / bound the
// engine's root, podman's own socket and the kept storage into the step).
// The config names only buildah's directory; what is mounted there is in
// mountinfo, the runtime's own (the process's), as a file system and a
// path in it: that is what is judged.
func CheckBuildMounts(config, mountinfo []byte, f Facts) error {
	var s struct {
		Mounts []Mount `json:"mounts"`
	}
	if err := json.Unmarshal(config, &s); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	mounts, err := parseMountinfo(mountinfo)
	if err != nil {
		return &Refusal{"mounts", "mountinfo", err.Error()}
	}
	var allowed []place
	for _, a := range []struct {
		dir      string
		children []string // the first component below dir, as a pattern
		readOnly bool
	}{
		{f.Tmp, []string{"libpod_builder*", "buildah*"}, false},
		// A layer's directory, by its id, never the storage's records
		// beside them (containers.json, images.json); read-only: a
		// link to an image's own layer bound rw let a step change the
		// image under its digest (buildah binds a stage or an image
		// from a layer of its own).
		{path.Join(f.Storage, f.Driver, "dir"), []string{idPattern}, true},
		// A build container's own files (its secrets).
		{path.Join(f.Storage, f.Driver+"-containers"), []string{idPattern}, false},
		{path.Join(f.RunRoot, f.Driver+"-containers"), []string{idPattern}, false},
	} {
		if !path.IsAbs(a.dir) || f.Driver == "" {
			continue
		}
		p := mounts.at(path.Clean(a.dir))
		p.children, p.readOnly = a.children, a.readOnly
		allowed = append(allowed, p)
	}
	sys := mounts.at("/sys")
	for i, m := range s.Mounts {
		if !isBind(m) {
			continue
		}
		src := path.Clean(m.Source)
		field := fmt.Sprintf("mounts[%d].source", i)
		if !path.IsAbs(src) {
			return &Refusal{"mounts", field, fmt.Sprintf("%q is not an absolute path", m.Source)}
		}
		got := mounts.at(src)
		if src == "/sys" && got.dev == sys.dev && got.path == "/" {
			continue
		}
		ok := false
		for _, a := range allowed {
			if a.holds(got) {
				if a.readOnly && (!slices.Contains(m.Options, "ro") || slices.Contains(m.Options, "rw")) {
					return &Refusal{"mounts", field, fmt.Sprintf("a build step's bind of %s, a layer of the storage, must be read-only", m.Destination)}
				}
				ok = true
			}
		}
		if !ok {
			return &Refusal{"mounts", field, fmt.Sprintf("a build step's bind of %s, which is %s of file system %s: not the build's context, a layer or buildah's own (a symbolic link in a RUN --mount source?)", m.Destination, got.path, got.dev)}
		}
		// A recursive bind carries what is mounted below the source.
		for _, below := range mounts {
			if strings.HasPrefix(below.point, src+"/") {
				return &Refusal{"mounts", field, fmt.Sprintf("a build step's bind of %s carries the mount at %s with it", m.Destination, below.point)}
			}
		}
	}
	return nil
}

// idPattern is the storage's name of a layer or a container: 64 hex
// digits.
var idPattern = strings.Repeat("[0-9a-f]", 64)

// mountEntry is one line of mountinfo: a file system (dev), the path in
// it (root) mounted at point.
type mountEntry struct {
	id, parent       string
	dev, root, point string
}

// place is a file system and a path in it; children, if set, are the
// patterns one of which the first component below path must match.
type place struct {
	dev, path string
	children  []string
	readOnly  bool
}

// holds tells whether q is p or below it (below one of its children, if
// p has patterns for them).
func (p place) holds(q place) bool {
	if p.dev == "" || q.dev != p.dev {
		return false
	}
	rest, ok := strings.CutPrefix(q.path, strings.TrimSuffix(p.path, "/")+"/")
	if !ok {
		return len(p.children) == 0 && q.path == p.path
	}
	if len(p.children) == 0 {
		return true
	}
	first, _, _ := strings.Cut(rest, "/")
	for _, c := range p.children {
		if m, err := path.Match(c, first); err == nil && m {
			return true
		}
	}
	return false
}

type mountTable []mountEntry

// at is the file system and path the absolute, clean path p names.
func (t mountTable) at(p string) place {
	i := t.index(p)
	if i < 0 {
		return place{}
	}
	m := t[i]
	rest := strings.TrimPrefix(strings.TrimPrefix(p, m.point), "/")
	return place{dev: m.dev, path: path.Join(m.root, rest)}
}

// index is the mount at which the absolute, clean path p ends, found as a
// path walk finds it: from the root of the table down, at each mount the
// child met first along p (the shortest point at or above it: a mount at
// an ancestor hides what was mounted below it before), and a mount
// stacked on another at the same point, its child, above it. mountinfo's
// order is not the tree's: crun's binds under a container's root are
// listed before the root's own bind. -1 for an empty table.
func (t mountTable) index(p string) int {
	ids := map[string]bool{}
	children := map[string][]int{}
	for i, m := range t {
		ids[m.id] = true
		children[m.parent] = append(children[m.parent], i)
	}
	covers := func(point string) bool {
		return point == p || point == "/" || strings.HasPrefix(p, point+"/")
	}
	shortest := func(cands []int, skip int) int {
		best := -1
		for _, c := range cands {
			if c != skip && covers(t[c].point) && (best < 0 || len(t[c].point) < len(t[best].point)) {
				best = c
			}
		}
		return best
	}
	var roots []int
	for i, m := range t {
		if !ids[m.parent] {
			roots = append(roots, i)
		}
	}
	cur := shortest(roots, -1)
	for steps := 0; cur >= 0 && steps <= len(t); steps++ {
		next := shortest(children[t[cur].id], cur)
		if next < 0 {
			break
		}
		cur = next
	}
	return cur
}

func parseMountinfo(b []byte) (mountTable, error) {
	var t mountTable
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("a mountinfo line of %d fields", len(f))
		}
		root, err1 := unescapeMountinfo(f[3])
		point, err2 := unescapeMountinfo(f[4])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("a mountinfo line that cannot be read: %q", line)
		}
		t = append(t, mountEntry{id: f[0], parent: f[1], dev: f[2], root: root, point: point})
	}
	return t, nil
}

// unescapeMountinfo undoes the kernel's octal escapes of space, tab,
// newline and backslash (\040, \011, \012, \134).
func unescapeMountinfo(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("a cut escape in %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", err
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// CheckMounted refuses a container whose binds are not what the checks
// judged: crun makes every bind of the config before it runs the
// createRuntime hook, so a source in the workdir that the command swaps
// between a directory and a symbolic link (renameat2 RENAME_EXCHANGE) can
// be mounted as the link's target and judged as the directory (a
// reviewer's container got the engine's root so, and podman's own socket
// in it). Each bind's source is resolved here as the checks resolved it,
// in the runtime's namespace (own: this process's mountinfo), and must be
// the very file system and path mounted at the bind's place in the
// container's namespace (container: its init's mountinfo, before
// pivot_root, where the place is the root's path and the destination).
//
// The source is resolved once, and that one resolution is both judged
// (it must lie in the workdir, a named volume or the container's own
// files, as checkMounts requires; the seal's bind must be stockade's
// binary) and compared: a swap between the checks' resolutions cannot
// pass a mount that only one of them saw.
func CheckMounted(config, container, own []byte, f Facts) error {
	var s struct {
		Root *struct {
			Path string `json:"path"`
		} `json:"root"`
		Mounts []Mount `json:"mounts"`
		Linux  *Linux  `json:"linux"`
	}
	if err := json.Unmarshal(config, &s); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	if s.Root == nil || !path.IsAbs(s.Root.Path) {
		return &Refusal{"mounts", "root.path", "the container's root is no absolute path"}
	}
	rootfs := path.Clean(s.Root.Path)
	ctr, err := parseMountinfo(container)
	if err != nil {
		return &Refusal{"mounts", "mountinfo", err.Error()}
	}
	here, err := parseMountinfo(own)
	if err != nil {
		return &Refusal{"mounts", "mountinfo", err.Error()}
	}
	binds := map[int]string{} // the checked binds' entries, to their resolved sources
	// A later bind at the same place hides an earlier one: the last counts.
	last := map[string]int{}
	for i, m := range s.Mounts {
		if isBind(m) {
			last[path.Clean("/"+m.Destination)] = i
		}
	}
	for i, m := range s.Mounts {
		dest := path.Clean("/" + m.Destination)
		if !isBind(m) || last[dest] != i {
			continue
		}
		field := fmt.Sprintf("mounts[%d].source", i)
		real, err := evalSymlinks(m.Source)
		if err != nil {
			return &Refusal{"mounts", field, err.Error()}
		}
		if dest == SealPath {
			if real != path.Clean(f.SealSource) {
				return &Refusal{"mounts", field, fmt.Sprintf("%s resolves to %s, not stockade's binary", m.Source, real)}
			}
		} else if !allowedSource(real, &f) {
			return &Refusal{"mounts", field, fmt.Sprintf("%s resolves to %s, outside the workdir, the named volumes and the container's own files", m.Source, real)}
		}
		want := here.at(real)
		got := ctr.at(path.Join(rootfs, dest))
		if got.dev == "" || got.dev != want.dev || got.path != want.path {
			return &Refusal{"mounts", field, fmt.Sprintf("the runtime bound %s of file system %s at %s, not %s, which was checked (a directory swapped for a symbolic link?)", got.path, got.dev, m.Destination, m.Source)}
		}
		if k := ctr.index(path.Join(rootfs, dest)); k >= 0 {
			binds[k] = real
		}
	}
	return auditTable(ctr, here, rootfs, binds, expected(rootfs, s.Mounts, s.Linux))
}

// expected are the points under rootfs where the config has the runtime
// mount something: its mounts, devices (and the runtime's default ones),
// masked and read-only paths.
func expected(rootfs string, mounts []Mount, l *Linux) map[string]bool {
	points := map[string]bool{}
	add := func(p string) { points[path.Join(rootfs, path.Clean("/"+p))] = true }
	for _, m := range mounts {
		add(m.Destination)
	}
	// The devices every runtime makes (the OCI spec's defaults), bound
	// from the engine's /dev in a user namespace.
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"} {
		add(d)
	}
	if l != nil {
		for _, d := range l.Devices {
			add(d.Path)
		}
		for _, p := range append(append([]string{}, l.MaskedPaths...), l.ReadonlyPaths...) {
			add(p)
		}
	}
	return points
}

// auditTable refuses a mount under the container's root that the config
// does not account for. A destination is resolved by the runtime inside
// the root, through links, those of a directory an earlier bind brought
// in among them: -v $PWD:/w -v $PWD/sw:/w/sw with sw swapped for a link
// to /stockade-engine bound the engine's directory at the root's
// /stockade-engine while the mount at the literal /w/sw was the first
// bind's own, as checked. So every mount below the root must be at a
// point the config names, or come with a checked bind: a mount below a
// bind (binds maps its entry to its resolved source) is there in the
// runtime's namespace too, the same file system and path at the same
// place below the source (what a recursive bind brings along).
func auditTable(ctr, here mountTable, rootfs string, binds map[int]string, points map[string]bool) error {
	byID := map[string]int{}
	for i, m := range ctr {
		byID[m.id] = i
	}
	for _, m := range ctr {
		if !strings.HasPrefix(m.point, rootfs+"/") || points[m.point] {
			continue
		}
		// The nearest checked bind above it.
		bind, src := -1, ""
		j, ok := byID[m.parent]
		for steps := 0; ok && steps <= len(ctr); steps++ {
			if s, isBind := binds[j]; isBind {
				bind, src = j, s
				break
			}
			j, ok = byID[ctr[j].parent]
		}
		if bind < 0 {
			return &Refusal{"mounts", "mountinfo", fmt.Sprintf("a mount at %s, which the config does not name (a destination through a symbolic link?)", strings.TrimPrefix(m.point, rootfs))}
		}
		rel := strings.TrimPrefix(m.point, ctr[bind].point)
		there := path.Join(src, rel)
		k := here.index(there)
		if k < 0 || here[k].point != there || here[k].dev != m.dev || here[k].root != m.root {
			return &Refusal{"mounts", "mountinfo", fmt.Sprintf("a mount at %s, below the bind at %s, that %s does not have (a destination through a symbolic link?)", strings.TrimPrefix(m.point, rootfs), strings.TrimPrefix(ctr[bind].point, rootfs), there)}
		}
	}
	return nil
}

// allowedSource tells whether real, a resolved source, lies in the
// workdir, a named volume or the container's own files (each resolving to
// itself, as under requires).
func allowedSource(real string, f *Facts) bool {
	dirs := append(append([]string{f.Workdir}, f.Volumes...), ownDirs(f, containerID(f))...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if rd, err := evalSymlinks(d); err == nil && rd == path.Clean(d) && (real == rd || strings.HasPrefix(real, rd+"/")) {
			return true
		}
	}
	return false
}

func containerID(f *Facts) string {
	if f.Container == nil {
		return ""
	}
	return f.Container.ID
}

// MountedAsChecked is the container mountinfo CheckMounted accepts for
// config: own (the runtime namespace's mountinfo) with each bind of the
// config mounted at its place as its source resolves now. Tests of the
// hook stand it in for a runtime's work.
func MountedAsChecked(config, own []byte) ([]byte, error) {
	var s struct {
		Root   struct{ Path string } `json:"root"`
		Mounts []Mount               `json:"mounts"`
	}
	if err := json.Unmarshal(config, &s); err != nil {
		return nil, err
	}
	here, err := parseMountinfo(own)
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, own...)
	// Each bind stacked on the mount that holds its place, in order.
	table := append(mountTable{}, here...)
	for i, m := range s.Mounts {
		if !isBind(m) {
			continue
		}
		real, err := evalSymlinks(m.Source)
		if err != nil {
			return nil, err
		}
		p := here.at(real)
		point := path.Join(s.Root.Path, path.Clean("/"+m.Destination))
		parent := table.under(point)
		id := strconv.Itoa(90000 + i)
		table = append(table, mountEntry{id: id, parent: parent, dev: p.dev, root: p.path, point: point})
		out = fmt.Appendf(out, "%s %s %s %s %s rw - none none rw\n", id, parent, p.dev, escapeMountinfo(p.path), escapeMountinfo(point))
	}
	return out, nil
}

// under is the id of the mount a new mount at point would be stacked on.
func (t mountTable) under(point string) string {
	if i := t.index(point); i >= 0 {
		return t[i].id
	}
	return "1"
}

func escapeMountinfo(s string) string {
	return strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`).Replace(s)
}
