package ocihook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/seal"
)

// Precreate rewrites a proposed runtime configuration so that the
// engine's own defaults pass Check, narrowing and never widening: the
// sandbox user, no_new_privileges, a user namespace of the container's own,
// nosuid and nodev on every bind, the canonical seccomp profile in place of
// the engine's, the masks, no core dumps, and the entrypoint under seal.
// What the agent asked for beyond the policy (a capability beyond the
// defaults, no seccomp profile at all, a device, a bind from outside) is
// left as it is, for Check to refuse with its reason: a precreate hook's
// own error never reaches the agent. Fields Precreate does not know are
// kept as they are.
func Precreate(config []byte, f Facts) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var cfg map[string]any
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("reading the container's config: %w", err)
	}
	if cfg == nil {
		return nil, fmt.Errorf("reading the container's config: not a JSON object")
	}
	process := object(cfg, "process")
	linux := object(cfg, "linux")

	user := object(process, "user")
	user["uid"], user["gid"] = f.UID, f.GID
	delete(user, "additionalGids")
	process["noNewPrivileges"] = true
	var rlimits []any
	if rl, ok := process["rlimits"].([]any); ok {
		for _, r := range rl {
			if m, ok := r.(map[string]any); !ok || m["type"] != "RLIMIT_CORE" {
				rlimits = append(rlimits, r)
			}
		}
	}
	process["rlimits"] = append(rlimits, map[string]any{"type": "RLIMIT_CORE", "hard": 0, "soft": 0})

	if hooks, ok := cfg["hooks"].(map[string]any); ok {
		// Hooks in the container's namespaces would run outside seal.
		delete(hooks, "createContainer")
		delete(hooks, "startContainer")
	}
	if sc, ok := linux["seccomp"]; ok && sc != nil {
		// No profile at all is seccomp=unconfined, which Check refuses.
		linux["seccomp"] = f.Seccomp
	}
	userNamespace(linux, f.UIDs, f.GIDs)
	if err := moveAskedDevices(cfg, linux); err != nil {
		return nil, err
	}
	linux["maskedPaths"] = union(linux["maskedPaths"], MaskedPaths)
	linux["readonlyPaths"] = union(linux["readonlyPaths"], ReadonlyPaths)

	var mounts []any
	if ms, ok := cfg["mounts"].([]any); ok {
		for _, m := range ms {
			mm, ok := m.(map[string]any)
			if dest, _ := mm["destination"].(string); !ok || filepath.Clean(dest) == SealPath {
				continue
			}
			if mm["destination"] == "/proc" && mm["type"] == "proc" {
				var opts []string
				for _, o := range stringList(mm["options"]) {
					// suid, exec and dev would undo their "no" forms.
					if !strings.HasPrefix(o, "hidepid=") && !slices.Contains(ProcOptions, o) && !slices.Contains([]string{"suid", "exec", "dev"}, o) {
						opts = append(opts, o)
					}
				}
				mm["options"] = append(opts, ProcOptions...)
			}
			if t, _ := mm["type"].(string); ReadonlyTypes[t] {
				// --privileged asks for them writable: the kernel
				// refuses a writable sysfs here before the checks run,
				// and no container needs to write them.
				mm["options"] = union(slices.DeleteFunc(stringList(mm["options"]), func(o string) bool { return o == "rw" }), []string{"ro"})
			}
			if t, _ := mm["type"].(string); t == "bind" || slices.ContainsFunc(stringList(mm["options"]), func(o string) bool { return o == "bind" || o == "rbind" }) {
				// Where the agent asked for suid or dev, they stay and
				// undo these: Check refuses them.
				mm["options"] = union(mm["options"], []string{"nosuid", "nodev"})
			}
			mounts = append(mounts, mm)
		}
	}
	cfg["mounts"] = append(mounts, map[string]any{
		"destination": SealPath, "type": "bind", "source": f.SealSource,
		"options": []string{"bind", "ro", "nosuid", "nodev"},
	})

	var spec Spec
	if b, err := json.Marshal(cfg); err != nil || json.Unmarshal(b, &spec) != nil {
		return nil, fmt.Errorf("reading the container's config: the fields stockade checks do not have their OCI types")
	}
	policy, err := json.Marshal(Policy(&spec))
	if err != nil {
		return nil, err
	}
	args := stringList(process["args"])
	if len(args) >= 2 && args[0] == SealPath && args[1] == "seal" {
		// Wrapped already (by a precreate run before, or by whoever wrote
		// the config): keep the command, never the policy it came with.
		if i := slices.Index(args, "--"); i >= 0 {
			args = args[i+1:]
		}
	}
	process["args"] = append([]string{SealPath, "seal", "--keep-caps", "--policy", string(policy), "--"}, args...)

	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Policy derives the seal policy of a container from its mounts: the whole
// tree may be read and run; writing is allowed where a mount is writable
// anyway (the root unless it is read-only, writable binds and tmpfs), so
// that Landlock holds the line if a mount is not what it claims. Signals
// and abstract unix sockets are scoped to the container where the kernel
// can (Landlock ABI 6). The system call filter is stockade's default
// profile, on top of the workload profile of linux.seccomp.
func Policy(s *Spec) seal.Policy {
	fs := &seal.Filesystem{Allow: []seal.PathAccess{{Path: "/", Access: "execute"}}}
	if s.Root != nil && !s.Root.Readonly {
		fs.Allow = append(fs.Allow, seal.PathAccess{Path: "/", Access: "write"})
	}
	for _, m := range s.Mounts {
		if slices.Contains(m.Options, "ro") || filepath.Clean(m.Destination) == SealPath {
			continue
		}
		if isBind(m) || m.Type == "tmpfs" || m.Type == "devpts" || m.Type == "mqueue" {
			fs.Allow = append(fs.Allow, seal.PathAccess{Path: filepath.Clean(m.Destination), Access: "write"})
		}
	}
	return seal.Policy{Filesystem: fs}
}

// object returns m[key] as an object, making it when it is missing.
func object(m map[string]any, key string) map[string]any {
	o, ok := m[key].(map[string]any)
	if !ok {
		o = map[string]any{}
		m[key] = o
	}
	return o
}

// stringList returns a JSON array of strings; other elements are dropped.
func stringList(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, e := range a {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// moveAskedDevices moves the devices beyond DefaultDevices from
// linux.devices to the AskedDevices annotation (see there).
func moveAskedDevices(cfg, linux map[string]any) error {
	devs, _ := linux["devices"].([]any)
	var keep, asked []any
	for _, d := range devs {
		var dev Device
		if b, err := json.Marshal(d); err != nil || json.Unmarshal(b, &dev) != nil {
			return fmt.Errorf("reading the container's config: linux.devices holds %v, not a device", d)
		}
		if slices.Contains(DefaultDevices, dev) {
			keep = append(keep, d)
		} else {
			asked = append(asked, d)
		}
	}
	if len(asked) == 0 {
		return nil
	}
	b, err := json.Marshal(asked)
	if err != nil {
		return err
	}
	linux["devices"] = keep
	object(cfg, "annotations")[AskedDevices] = string(b)
	return nil
}

// userNamespace gives the container a user namespace of its own when it
// has none (podman makes none unless told to, and the engine's would be
// shared): the engine's ids mapped onto themselves, so that a file keeps
// its owner, and the container's capabilities count in its own namespace
// only. A namespace the config already has is left to Check.
func userNamespace(linux map[string]any, uids, gids []IDRange) {
	ns, _ := linux["namespaces"].([]any)
	for _, e := range ns {
		if m, ok := e.(map[string]any); ok && m["type"] == "user" {
			return
		}
	}
	linux["namespaces"] = append(ns, map[string]any{"type": "user"})
	linux["uidMappings"], linux["gidMappings"] = identity(uids), identity(gids)
}

func identity(ids []IDRange) []any {
	var m []any
	for _, r := range ids {
		m = append(m, map[string]any{"containerID": r.Start, "hostID": r.Start, "size": r.Count})
	}
	return m
}

func union(v any, add []string) []string {
	out := stringList(v)
	for _, p := range add {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
