package ocihook

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

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
	}{
		{f.Tmp, []string{"libpod_builder*", "buildah*"}},
		// A layer's directory, by its id, never the storage's records
		// beside them (containers.json, images.json).
		{path.Join(f.Storage, f.Driver, "dir"), []string{idPattern}},
		// A build container's own files (its secrets).
		{path.Join(f.Storage, f.Driver+"-containers"), []string{idPattern}},
		{path.Join(f.RunRoot, f.Driver+"-containers"), []string{idPattern}},
	} {
		if !path.IsAbs(a.dir) || f.Driver == "" {
			continue
		}
		p := mounts.at(path.Clean(a.dir))
		p.children = a.children
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
			ok = ok || a.holds(got)
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
	dev, root, point string
}

// place is a file system and a path in it; children, if set, are the
// patterns one of which the first component below path must match.
type place struct {
	dev, path string
	children  []string
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

// at is the file system and path the absolute, clean path p names: the
// last mount, in mountinfo's order, whose point is p or above it (a later
// mount at a point hides what was mounted at or below it before; a mount
// is listed after the one it is mounted on), and the rest of p below it.
func (t mountTable) at(p string) place {
	best := -1
	for i, m := range t {
		if m.point == p || m.point == "/" || strings.HasPrefix(p, m.point+"/") {
			best = i
		}
	}
	if best < 0 {
		return place{}
	}
	m := t[best]
	rest := strings.TrimPrefix(strings.TrimPrefix(p, m.point), "/")
	return place{dev: m.dev, path: path.Join(m.root, rest)}
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
		t = append(t, mountEntry{dev: f[2], root: root, point: point})
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
