package ocihook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The checks of a container's mounts: where binds come from, their
// options, propagation, /proc, and the wrapper at SealPath.

// under resolves path (symbolic links too, as the kernel will) and reports
// whether it lies at or beneath one of dirs, and which. A dir is where it
// is, not where a symlink leads: a volume's directory in the engine's
// storage, or a container's own, made a link by an engine of an earlier
// session (the storage is kept), would otherwise allow what it names, the
// storage's records among them. The dirs are canonical paths.
func under(path string, dirs []string) (string, bool) {
	if !filepath.IsAbs(path) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if rd, err := filepath.EvalSymlinks(d); err == nil && rd == filepath.Clean(d) && (real == rd || strings.HasPrefix(real, rd+"/")) {
			return d, true
		}
	}
	return "", false
}

func isBind(m Mount) bool {
	return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
}

func checkMounts(s *Spec, f *Facts) (string, string) {
	// Of the engine's storage, only the container's own files: the rest
	// holds the engine's records (LookupContainer reads them) and the
	// layers of every image and container.
	allowed := append(append([]string{f.Workdir}, f.Volumes...), ownDirs(f, f.Container.ID)...)
	for i, m := range s.Mounts {
		field := fmt.Sprintf("mounts[%d]", i)
		// Cleaned as the runtime cleans it: /.stockade/./stockade is
		// the wrapper's place too, and a bind there replaces the wrapper.
		if filepath.Clean(m.Destination) == SealPath {
			if m.Source != f.SealSource || !isBind(m) || !slices.Contains(m.Options, "ro") || slices.Contains(m.Options, "rw") {
				return field, fmt.Sprintf("%s must be stockade's binary, bound read-only", SealPath)
			}
			continue
		}
		if !isBind(m) {
			where, ok := MountTypes[m.Type]
			if !ok {
				return field + ".type", fmt.Sprintf("%q mounts are not allowed (only binds and %s)", m.Type, "proc, sysfs, cgroup, tmpfs, devpts, mqueue")
			}
			if where != "" && m.Destination != where {
				return field + ".destination", fmt.Sprintf("a %s mount belongs at %s, not %s", m.Type, where, m.Destination)
			}
			if ReadonlyTypes[m.Type] && (!slices.Contains(m.Options, "ro") || slices.Contains(m.Options, "rw")) {
				return field + ".options", fmt.Sprintf("a %s mount must be read-only", m.Type)
			}
			continue
		}
		dir, ok := under(m.Source, allowed)
		if !ok {
			return field + ".source", fmt.Sprintf("%q is outside the workdir, the named volumes and the container's own files", m.Source)
		}
		if slices.Contains(f.Volumes, dir) {
			if mnt, err := mountAtOrBelow(f, m.Source); err != "" {
				return field + ".source", err
			} else if mnt != "" {
				return field + ".source", fmt.Sprintf("a volume with a mount of its own at %s (podman volume create --opt): it could bring in any directory of the engine's", mnt)
			}
		}
		for _, o := range []string{"nosuid", "nodev"} {
			if !slices.Contains(m.Options, o) {
				return field + ".options", fmt.Sprintf("bind of %s without %s", m.Source, o)
			}
		}
		if o, undone := undoes(m.Options, "suid", "dev"); undone {
			return field + ".options", fmt.Sprintf("bind of %s with %s, which undoes no%s (the runtime applies options in order)", m.Source, o, o)
		}
		if dir == f.Workdir && !slices.Contains(m.Options, "rbind") {
			return field + ".options", fmt.Sprintf("non-recursive bind of %s would uncover what the sandbox masks beneath it; use rbind", m.Source)
		}
	}
	return "", ""
}

// mountAtOrBelow reports a mount point at or below path (links
// resolved), as the engine's mount table has it: a named volume made with
// mount options (type=none,o=bind,device=/stockade-engine/storage) is a
// mount the engine makes at the volume's directory before the runtime
// binds it, of whatever the agent named. A reason is returned when the
// table cannot be read.
func mountAtOrBelow(f *Facts, path string) (string, string) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Sprintf("%s: %v", path, err)
	}
	read := f.MountPoints
	if read == nil {
		read = mountPoints
	}
	points, err := read()
	if err != nil {
		return "", fmt.Sprintf("reading the engine's mount table: %v", err)
	}
	for _, p := range points {
		if p == real || strings.HasPrefix(p, real+"/") {
			return p, ""
		}
	}
	return "", ""
}

// mountPoints lists the mount points of this process's mount namespace
// (the runtime's, which is the engine's, for the createRuntime hook).
func mountPoints() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			points = append(points, unescapeMount(f[4]))
		}
	}
	return points, nil
}

// unescapeMount undoes the octal escapes (\040 for a space) of a path in
// the mount table.
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// undoes reports the first of opts (suid, dev, exec) that options hold:
// each clears the flag its "no" form sets, whatever their order.
func undoes(options []string, opts ...string) (string, bool) {
	for _, o := range opts {
		if slices.Contains(options, o) {
			return o, true
		}
	}
	return "", false
}

func checkPropagation(s *Spec, _ *Facts) (string, string) {
	shared := []string{"shared", "rshared"}
	if slices.Contains(shared, s.Linux.RootfsPropagation) {
		return "linux.rootfsPropagation", "shared: the container's mounts would reach the engine"
	}
	for i, m := range s.Mounts {
		for _, o := range m.Options {
			if slices.Contains(shared, o) {
				return fmt.Sprintf("mounts[%d].options", i), fmt.Sprintf("%s propagation would carry mounts between %s and the engine", o, m.Destination)
			}
		}
	}
	return "", ""
}

func checkProc(s *Spec, _ *Facts) (string, string) {
	found := false
	for i, m := range s.Mounts {
		switch {
		case m.Destination == "/proc" && m.Type == "proc" && !isBind(m):
			for _, o := range ProcOptions {
				if !slices.Contains(m.Options, o) {
					return fmt.Sprintf("mounts[%d].options", i), "/proc without " + o
				}
			}
			if o, undone := undoes(m.Options, "suid", "exec", "dev"); undone {
				return fmt.Sprintf("mounts[%d].options", i), "/proc with " + o + ", which undoes no" + o
			}
			for _, o := range m.Options {
				if strings.HasPrefix(o, "hidepid=") && o != "hidepid=2" {
					return fmt.Sprintf("mounts[%d].options", i), "/proc with " + o + " beside hidepid=2 (the last one counts)"
				}
			}
			found = true
		case m.Destination == "/proc" || strings.HasPrefix(m.Destination, "/proc/"):
			return fmt.Sprintf("mounts[%d]", i), fmt.Sprintf("%s mount over %s: only the container's own proc belongs there", m.Type, m.Destination)
		}
	}
	if !found {
		return "mounts", "no proc mount at /proc"
	}
	return "", ""
}

func checkEntrypoint(s *Spec, f *Facts) (string, string) {
	a := s.Process.Args
	if len(a) < 4 || a[0] != SealPath || a[1] != "seal" {
		return "process.args", fmt.Sprintf("the entrypoint does not run under %s seal", SealPath)
	}
	// The wrapper is the last mount at SealPath or above it: a later one
	// (a bind over /.stockade) would put another program in its place.
	last := -1
	for i, m := range s.Mounts {
		d := filepath.Clean(m.Destination)
		if d == SealPath {
			last = i
		} else if d == "/" || strings.HasPrefix(SealPath, d+"/") {
			return fmt.Sprintf("mounts[%d].destination", i), fmt.Sprintf("a mount over %s would hide the wrapper", d)
		}
	}
	if last < 0 {
		return "mounts", SealPath + " is not mounted"
	}
	// The seal's policy is the one the mounts give, as precreate writes
	// it: a config that brings its own (a wider one, a --policy-file of
	// the image's, or none, for descriptor 3) would choose its own walls.
	want, err := json.Marshal(Policy(s))
	if err != nil || len(a) < 7 || a[2] != "--keep-caps" || a[3] != "--policy" || !sameJSON([]byte(a[4]), want) || a[5] != "--" {
		return "process.args", fmt.Sprintf("the entrypoint's seal is not %s seal --keep-caps --policy POLICY -- CMD, with the policy the container's mounts give", SealPath)
	}
	return "", ""
}
