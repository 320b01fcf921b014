package ocihook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// Refusal is a configuration a check refused: Check names the check, Field
// the config field, in one line.
type Refusal struct {
	Check  string
	Field  string
	Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("stockade refused the container (check %s): %s: %s", r.Check, r.Field, r.Reason)
}

// check is one rule of createRuntime: name, and a function that returns
// the field and the reason of a refusal, or "" when the config passes.
type check struct {
	name string
	run  func(s *Spec, f *Facts) (field, reason string)
}

// checks run in this order; the first refusal stops the container.
var checks = []check{
	{"process", checkProcess},
	{"user", checkUser},
	{"groups", checkGroups},
	{"no_new_privileges", checkNNP},
	{"capabilities", checkCaps},
	{"seccomp", checkSeccomp},
	{"namespaces", checkNamespaces},
	{"root", checkRoot},
	{"mounts", checkMounts},
	{"propagation", checkPropagation},
	{"proc", checkProc},
	{"entrypoint", checkEntrypoint},
	{"hooks", checkHooks},
	{"devices", checkDevices},
	{"masked_paths", checkMasked},
	{"readonly_paths", checkReadonly},
	{"sysctl", checkSysctl},
	{"rlimits", checkRlimits},
	{"image", checkImage},
}

// Check validates config against the session's facts and returns a
// *Refusal for the first check it fails.
func Check(config []byte, f Facts) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if err := checkKeys(config); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	var s Spec
	if err := json.Unmarshal(config, &s); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	// The runtime cleans a mount's destination and joins a relative one
	// to the root: compare what it will mount on, not how it is spelled
	// (a bind at /.stockade/./stockade, or at //proc).
	for i := range s.Mounts {
		d := s.Mounts[i].Destination
		if !filepath.IsAbs(d) {
			return &Refusal{"mounts", fmt.Sprintf("mounts[%d].destination", i), fmt.Sprintf("%q is not an absolute path", d)}
		}
		s.Mounts[i].Destination = filepath.Clean(d)
	}
	if f.NamespaceOf == nil {
		f.NamespaceOf = namespaceOf
	}
	for _, c := range checks {
		if field, reason := c.run(&s, &f); reason != "" {
			return &Refusal{c.name, field, reason}
		}
	}
	return nil
}

func checkProcess(s *Spec, _ *Facts) (string, string) {
	if s.Process == nil || s.Linux == nil {
		return "process, linux", "missing"
	}
	return "", ""
}

func checkUser(s *Spec, f *Facts) (string, string) {
	if u := s.Process.User; u.UID != f.UID || u.GID != f.GID {
		return "process.user", fmt.Sprintf("uid %d gid %d, want the sandbox user %d:%d", u.UID, u.GID, f.UID, f.GID)
	}
	return "", ""
}

func checkGroups(s *Spec, f *Facts) (string, string) {
	for i, g := range s.Process.User.AdditionalGids {
		if g != f.GID {
			return fmt.Sprintf("process.user.additionalGids[%d]", i), fmt.Sprintf("group %d is not the sandbox group %d", g, f.GID)
		}
	}
	return "", ""
}

func checkNNP(s *Spec, _ *Facts) (string, string) {
	if !s.Process.NoNewPrivileges {
		return "process.noNewPrivileges", "false; setuid binaries and file capabilities would work"
	}
	return "", ""
}

func checkCaps(s *Spec, _ *Facts) (string, string) {
	c := s.Process.Capabilities
	if c == nil {
		return "", ""
	}
	sets := []struct {
		name string
		caps []string
		max  []string
	}{
		{"bounding", c.Bounding, DefaultCaps}, {"effective", c.Effective, DefaultCaps},
		{"permitted", c.Permitted, DefaultCaps}, {"inheritable", c.Inheritable, nil}, {"ambient", c.Ambient, nil},
	}
	for _, set := range sets {
		for _, name := range set.caps {
			if !slices.Contains(set.max, name) {
				return "process.capabilities." + set.name, fmt.Sprintf("%s is beyond the default set", name)
			}
		}
	}
	return "", ""
}

func checkSeccomp(s *Spec, f *Facts) (string, string) {
	if len(s.Linux.Seccomp) == 0 || bytes.Equal(s.Linux.Seccomp, []byte("null")) {
		return "linux.seccomp", "no seccomp profile (seccomp=unconfined)"
	}
	if !sameJSON(s.Linux.Seccomp, f.Seccomp) {
		return "linux.seccomp", "not stockade's workload profile"
	}
	return "", ""
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func checkNamespaces(s *Spec, f *Facts) (string, string) {
	for _, typ := range PrivateNamespaces {
		i := slices.IndexFunc(s.Linux.Namespaces, func(n Namespace) bool { return n.Type == typ })
		if i < 0 {
			return "linux.namespaces", fmt.Sprintf("no %s namespace: the container would share the engine's", typ)
		}
		if err := notEngine(s.Linux.Namespaces[i], f); err != "" {
			return fmt.Sprintf("linux.namespaces[%d].path", i), err
		}
	}
	for i, n := range s.Linux.Namespaces {
		if err := notEngine(n, f); err != "" {
			return fmt.Sprintf("linux.namespaces[%d].path", i), err
		}
	}
	return "", ""
}

func notEngine(n Namespace, f *Facts) string {
	if n.Path == "" {
		return ""
	}
	id, err := f.NamespaceOf(n.Path)
	if err != nil {
		return fmt.Sprintf("%s namespace %s cannot be identified: %v", n.Type, n.Path, err)
	}
	for typ, engine := range f.EngineNamespaces {
		if nsInode(id) == nsInode(engine) {
			return fmt.Sprintf("%s is the engine's own %s namespace", n.Path, typ)
		}
	}
	return ""
}

// namespaceOf identifies the namespace a path names as the runtime will
// open it: its symbolic links followed (the text of a link to
// /proc/self/ns/net says nothing of where it leads), and a bind-mounted
// namespace file (podman's /run/user/UID/netns/...), which is no link at
// all, by the inode it shows. The id has the form of the kernel's
// ("ns:[4026532011]"); nsInode compares ids by the number alone, which is
// unique across namespace types.
func namespaceOf(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("no inode for %s", path)
	}
	return fmt.Sprintf("ns:[%d]", st.Ino), nil
}

// nsInode is the number of a namespace id ("net:[4026532011]"), or the
// whole id when it has no brackets.
func nsInode(id string) string {
	if i := strings.LastIndexByte(id, '['); i >= 0 && strings.HasSuffix(id, "]") {
		return id[i+1 : len(id)-1]
	}
	return id
}

func checkRoot(s *Spec, f *Facts) (string, string) {
	if s.Root == nil {
		return "root", "missing"
	}
	if _, ok := under(s.Root.Path, []string{f.Storage}); !ok {
		return "root.path", fmt.Sprintf("%q is outside the engine's storage", s.Root.Path)
	}
	return "", ""
}

// under resolves path (symbolic links too, as the kernel will) and reports
// whether it lies at or beneath one of dirs, and which.
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
		if rd, err := filepath.EvalSymlinks(d); err == nil && (real == rd || strings.HasPrefix(real, rd+"/")) {
			return d, true
		}
	}
	return "", false
}

func isBind(m Mount) bool {
	return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
}

func checkMounts(s *Spec, f *Facts) (string, string) {
	allowed := append([]string{f.Workdir, f.Storage}, f.Volumes...)
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
			continue
		}
		dir, ok := under(m.Source, allowed)
		if !ok {
			return field + ".source", fmt.Sprintf("%q is outside the workdir, the engine's storage and the named volumes", m.Source)
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

// checkHooks refuses a hook that runs in the container: it would be a
// program of the container's that runs outside the entrypoint's seal.
func checkHooks(s *Spec, _ *Facts) (string, string) {
	if s.Hooks == nil {
		return "", ""
	}
	for name, hooks := range map[string][]Hook{"createContainer": s.Hooks.CreateContainer, "startContainer": s.Hooks.StartContainer} {
		if len(hooks) > 0 {
			return "hooks." + name, fmt.Sprintf("%s would run in the container outside %s seal", hooks[0].Path, SealPath)
		}
	}
	return "", ""
}

func checkDevices(s *Spec, _ *Facts) (string, string) {
	for i, d := range s.Linux.Devices {
		if !slices.Contains(DefaultDevices, d) {
			return fmt.Sprintf("linux.devices[%d]", i), fmt.Sprintf("%s (%s %d:%d) is not a default device", d.Path, d.Type, d.Major, d.Minor)
		}
	}
	if s.Linux.Resources == nil {
		return "", ""
	}
	for i, r := range s.Linux.Resources.Devices {
		if !r.Allow {
			continue
		}
		ok := r.Type == "c" && r.Major != nil && r.Minor != nil &&
			slices.ContainsFunc(DefaultDevices, func(d Device) bool { return d.Major == *r.Major && d.Minor == *r.Minor })
		if !ok {
			return fmt.Sprintf("linux.resources.devices[%d]", i), "allows a device beyond the defaults"
		}
	}
	return "", ""
}

func checkMasked(s *Spec, _ *Facts) (string, string) {
	for _, p := range MaskedPaths {
		if !slices.Contains(s.Linux.MaskedPaths, p) {
			return "linux.maskedPaths", p + " is not masked"
		}
	}
	return "", ""
}

func checkReadonly(s *Spec, _ *Facts) (string, string) {
	for _, p := range ReadonlyPaths {
		if !slices.Contains(s.Linux.ReadonlyPaths, p) {
			return "linux.readonlyPaths", p + " is not read-only"
		}
	}
	return "", ""
}

func checkSysctl(s *Spec, _ *Facts) (string, string) {
	for k := range s.Linux.Sysctl {
		if !strings.HasPrefix(k, "net.") {
			return "linux.sysctl", fmt.Sprintf("%s: only net.* sysctls, which the container's network namespace holds", k)
		}
	}
	return "", ""
}

// checkRlimits looks at every RLIMIT_CORE: the runtime sets each in turn,
// so a second one would stand in place of the first.
func checkRlimits(s *Spec, _ *Facts) (string, string) {
	found := false
	for i, r := range s.Process.Rlimits {
		if r.Type == "RLIMIT_CORE" {
			if r.Hard != 0 || r.Soft != 0 {
				return fmt.Sprintf("process.rlimits[%d]", i), "core dumps allowed; a dump would write the process's memory (keys included) to disk"
			}
			found = true
		}
	}
	if !found {
		return "process.rlimits", "no RLIMIT_CORE of 0"
	}
	return "", ""
}

var digestRef = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

func checkImage(_ *Spec, f *Facts) (string, string) {
	if f.RequireDigest && !digestRef.MatchString(f.Image) {
		return "image", fmt.Sprintf("%q is not pinned by digest (--require-digest): use NAME@sha256:...", f.Image)
	}
	return "", ""
}
