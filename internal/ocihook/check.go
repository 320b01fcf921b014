package ocihook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	{"container", checkContainer},
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
	{"annotations", checkAnnotations},
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

// runtimeAnnotation tells an annotation the runtime (crun) acts on: each
// one replaces or widens what the config says, before any hook runs or
// past every check. run.oci.seccomp_bpf_data loads a filter of the
// client's in place of the config's seccomp, run.oci.seccomp.plugins
// loads a library into the runtime itself, run.oci.hooks.stdout has the
// runtime create a file of the client's naming, run.oci.handler and the
// wasm variant run the container by another program,
// run.oci.keep_original_groups keeps the engine's groups.
func runtimeAnnotation(key string) bool {
	return strings.HasPrefix(key, "run.oci.") || key == "module.wasm.image/variant"
}

// checkAnnotations refuses an annotation the runtime acts on
// (runtimeAnnotation). The engine's runtime refuses one before the runtime
// reads the config (CheckRuntimeAnnotations); this is the hook's word on
// it too.
func checkAnnotations(s *Spec, _ *Facts) (string, string) {
	keys := make([]string, 0, len(s.Annotations))
	for k := range s.Annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if runtimeAnnotation(k) {
			return "annotations." + k, "an annotation the runtime acts on, past the config's checks (seccomp, groups, the runtime's own files)"
		}
	}
	return "", ""
}

// CheckRuntimeAnnotations refuses a config, any container's or build
// step's, with an annotation the runtime acts on (checkAnnotations). The
// engine's runtime runs it on every create before the real runtime reads
// the config: the createRuntime hook runs only once the runtime has
// opened the hooks' output files and loaded its seccomp plugins.
func CheckRuntimeAnnotations(config []byte) error {
	if err := checkKeys(config); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	var s struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(config, &s); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	if field, reason := checkAnnotations(&Spec{Annotations: s.Annotations}, nil); reason != "" {
		return &Refusal{"annotations", field, reason}
	}
	return nil
}

func checkProcess(s *Spec, _ *Facts) (string, string) {
	if s.Process == nil || s.Linux == nil {
		return "process, linux", "missing"
	}
	return "", ""
}

// checkContainer refuses a config the engine's storage has no record of
// (a container made with --rootfs, or one whose record could not be read):
// its root and its image cannot be told.
func checkContainer(_ *Spec, f *Facts) (string, string) {
	if f.Container == nil {
		return "container", "the engine's storage has no record of this container (a --rootfs container?)"
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

func checkCaps(s *Spec, _ *Facts) (string, string) { return capsWithin(s, nil) }

// capsWithin refuses a capability beyond DefaultCaps in any set, and one
// beyond inherit in the inheritable and ambient sets.
func capsWithin(s *Spec, inherit []string) (string, string) {
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
		{"permitted", c.Permitted, DefaultCaps}, {"inheritable", c.Inheritable, inherit}, {"ambient", c.Ambient, inherit},
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

// checkRoot: the root is the container's own layer, not another
// container's nor an image's, whose files a writable root would change
// under every container made from it.
func checkRoot(s *Spec, f *Facts) (string, string) {
	if s.Root == nil {
		return "root", "missing"
	}
	if want := rootOf(f, f.Container.Layer); filepath.Clean(s.Root.Path) != want {
		return "root.path", fmt.Sprintf("%q is not the container's own layer %s", s.Root.Path, want)
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
	if a, ok := s.Annotations[AskedDevices]; ok {
		var asked []Device
		if json.Unmarshal([]byte(a), &asked) != nil || len(asked) == 0 {
			return "annotations." + AskedDevices, "not a list of devices"
		}
		d := asked[0]
		return "linux.devices", fmt.Sprintf("%s (%s %d:%d) is not a default device", d.Path, d.Type, d.Major, d.Minor)
	}
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

// pinned reports whether ref ends in @sha256: and 64 lowercase hex digits.
// (No regexp: compiling one at start-up cost every stockade command.)
func pinned(ref string) bool {
	const prefix = "@sha256:"
	if len(ref) < len(prefix)+64 || ref[len(ref)-64-len(prefix):len(ref)-64] != prefix {
		return false
	}
	for _, c := range ref[len(ref)-64:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkImage reads the image's reference from the engine's record of the
// container (Container), never from the config, whose annotations the
// agent sets; and the digest the reference names must be one of the
// image's own.
func checkImage(_ *Spec, f *Facts) (string, string) {
	if !f.RequireDigest {
		return "", ""
	}
	c := f.Container
	if !pinned(c.Image) {
		return "image", fmt.Sprintf("%q is not pinned by digest (--require-digest): use NAME@sha256:...", c.Image)
	}
	if d := c.Image[strings.LastIndexByte(c.Image, '@')+1:]; !slices.Contains(c.ImageDigests, d) {
		return "image", fmt.Sprintf("%q names a digest the container's image %s does not have", c.Image, c.ImageID)
	}
	return "", ""
}
