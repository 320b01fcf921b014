package ocihook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/seal"
)

// session makes the facts of a session over temporary directories, and
// the podman config of a container that binds the workdir and a volume.
func session(t *testing.T) (Facts, []byte) {
	t.Helper()
	// Canonical, as the engine's facts are (an allowed directory counts
	// where it is, not where a link leads).
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := Facts{
		Workdir:          filepath.Join(base, "work"),
		Storage:          filepath.Join(base, "storage"),
		RunRoot:          filepath.Join(base, "run"),
		Driver:           "overlay",
		Volumes:          []string{filepath.Join(base, "volumes", "pg")},
		Seccomp:          json.RawMessage(`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}`),
		UID:              1000,
		GID:              1000,
		UIDs:             []IDRange{{0, 1}, {1, 65536}},
		GIDs:             []IDRange{{0, 1}, {1, 65535}},
		SealSource:       filepath.Join(base, "bin", "stockade"),
		Container:        &Container{ID: "abc", Layer: "abc", Image: "registry.test/busybox:1", ImageID: "1234", ImageDigests: []string{"sha256:" + strings.Repeat("ab", 32)}},
		EngineNamespaces: map[string]string{"network": "net:[1]", "pid": "pid:[1]"},
		NamespaceOf: func(path string) (string, error) {
			ids := map[string]string{"/run/user/1000/netns/netns-abc": "net:[2]", "/proc/1/ns/net": "net:[1]"}
			if id, ok := ids[path]; ok {
				return id, nil
			}
			return "", os.ErrNotExist
		},
	}
	for _, d := range []string{f.Workdir, f.Volumes[0], filepath.Join(f.Storage, "overlay/abc/merged"), filepath.Join(f.Storage, "overlay/def/merged"),
		filepath.Join(f.Storage, "overlay-containers/abc/userdata"), filepath.Join(f.Storage, "overlay-containers/def/userdata"),
		filepath.Join(f.RunRoot, "overlay-containers/abc/userdata"), filepath.Dir(f.SealSource), filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(f.Storage, "overlay-containers/abc/userdata/hosts"), nil, 0o644)
	os.WriteFile(filepath.Join(f.RunRoot, "overlay-containers/abc/userdata/hostname"), nil, 0o644)
	os.Symlink("/", filepath.Join(f.Workdir, "root"))
	raw, err := os.ReadFile("testdata/podman.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.NewReplacer("@STORAGE@", f.Storage, "@RUN@", f.RunRoot, "@WORK@", f.Workdir, "@VOLUME@", f.Volumes[0]).Replace(string(raw)))
	return f, raw
}

// TestPrecreate: podman's config for a container under the engine's
// defaults (root, extra groups, core dumps, binds without nosuid, an
// allow-all seccomp profile) fails the checks as it is and passes them
// once precreate has rewritten it; what precreate does not know is kept; a
// second run changes nothing.
func TestPrecreate(t *testing.T) {
	f, raw := session(t)
	var r *Refusal
	if err := Check(raw, f); !errors.As(err, &r) || r.Check != "user" {
		t.Errorf("podman's own config: %v, want refused by the user check", err)
	}
	out, err := Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(out, f); err != nil {
		t.Fatalf("precreated config refused: %v\n%s", err, out)
	}
	var s Spec
	json.Unmarshal(out, &s)
	var m map[string]any
	json.Unmarshal(out, &m)
	if m["hostname"] != "abc" || m["process"].(map[string]any)["cwd"] != "/" || m["linux"].(map[string]any)["uidMappings"] == nil {
		t.Errorf("fields precreate does not know were lost: %s", out)
	}
	if want := []string{SealPath, "seal", "--keep-caps", "--policy"}; !slices.Equal(s.Process.Args[:4], want) ||
		!slices.Equal(s.Process.Args[5:], []string{"--", "sh", "-c", "echo hi"}) {
		t.Errorf("args %q", s.Process.Args)
	}
	var policy struct {
		Filesystem struct {
			Allow []struct{ Path, Access string }
		}
	}
	if err := json.Unmarshal([]byte(s.Process.Args[4]), &policy); err != nil {
		t.Fatal(err)
	}
	if _, err := seal.Parse([]byte(s.Process.Args[4])); err != nil {
		t.Errorf("the entrypoint's policy is not one seal takes: %v", err)
	}
	var writable []string
	for _, a := range policy.Filesystem.Allow {
		if a.Access == "write" {
			writable = append(writable, a.Path)
		}
	}
	if want := []string{"/", "/dev", "/dev/pts", "/dev/mqueue", "/etc/hosts", "/etc/hostname", "/src"}; !slices.Equal(writable, want) {
		t.Errorf("writable paths %v, want %v (never the read-only /data)", writable, want)
	}
	again, err := Precreate(out, f)
	if err != nil {
		t.Fatal(err)
	}
	var s2 Spec
	json.Unmarshal(again, &s2)
	if !slices.Equal(s.Process.Args, s2.Process.Args) || len(s2.Mounts) != len(s.Mounts) {
		t.Errorf("a second precreate changed the config:\n%s\n%s", out, again)
	}
}

// TestCheck: the precreated config passes; each row changes one thing and
// must be refused by the check it names, with the field in the message.
func TestCheck(t *testing.T) {
	f, raw := session(t)
	good, err := Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	type cfg = map[string]any
	proc := func(m cfg) cfg { return m["process"].(cfg) }
	lin := func(m cfg) cfg { return m["linux"].(cfg) }
	mount := func(m cfg, i int) cfg { return m["mounts"].([]any)[i].(cfg) }
	addMount := func(m cfg, mnt cfg) { m["mounts"] = append(m["mounts"].([]any), mnt) }
	bind := func(src, dst string, opts ...string) cfg {
		return cfg{"destination": dst, "type": "bind", "source": src, "options": append([]string{"rbind", "nosuid", "nodev"}, opts...)}
	}
	home := filepath.Join(filepath.Dir(f.Workdir), "home")
	tests := []struct {
		name, check, field string
		change             func(m cfg)
		facts              func(f *Facts)
	}{
		{"no process", "process", "process", func(m cfg) { delete(m, "process") }, nil},
		{"no record in the engine's storage", "container", "container", nil, func(f *Facts) { f.Container = nil }},
		{"runs as root", "user", "process.user", func(m cfg) { proc(m)["user"].(cfg)["uid"] = 0 }, nil},
		{"extra group", "groups", "additionalGids[0]", func(m cfg) { proc(m)["user"].(cfg)["additionalGids"] = []any{0} }, nil},
		{"new privileges", "no_new_privileges", "noNewPrivileges", func(m cfg) { proc(m)["noNewPrivileges"] = false }, nil},
		{"cap-add ALL", "capabilities", "capabilities.bounding", func(m cfg) {
			c := proc(m)["capabilities"].(cfg)
			c["bounding"] = append(c["bounding"].([]any), "CAP_SYS_ADMIN")
		}, nil},
		{"ambient", "capabilities", "capabilities.ambient", func(m cfg) { proc(m)["capabilities"].(cfg)["ambient"] = []any{"CAP_CHOWN"} }, nil},
		{"seccomp=unconfined", "seccomp", "linux.seccomp", func(m cfg) { delete(lin(m), "seccomp") }, nil},
		{"another profile", "seccomp", "linux.seccomp", func(m cfg) { lin(m)["seccomp"] = cfg{"defaultAction": "SCMP_ACT_ALLOW"} }, nil},
		{"pid host", "namespaces", "linux.namespaces", func(m cfg) {
			ns := lin(m)["namespaces"].([]any)
			lin(m)["namespaces"] = ns[1:]
		}, nil},
		{"network of the engine", "namespaces", "linux.namespaces[1].path", func(m cfg) {
			lin(m)["namespaces"].([]any)[1].(cfg)["path"] = "/proc/1/ns/net"
		}, nil},
		{"root outside storage", "root", "root.path", func(m cfg) { m["root"].(cfg)["path"] = "/" }, nil},
		{"another container's layer as root", "root", "root.path", func(m cfg) { m["root"].(cfg)["path"] = f.Storage + "/overlay/def/merged" }, nil},
		{"-v of the engine's storage", "mounts", "mounts[11].source", func(m cfg) { addMount(m, bind(f.Storage, "/s")) }, nil},
		{"-v of another container's files", "mounts", "mounts[11].source", func(m cfg) {
			addMount(m, bind(f.Storage+"/overlay-containers/def/userdata", "/s"))
		}, nil},
		{"-v /:/host", "mounts", "mounts[11].source", func(m cfg) { addMount(m, bind("/", "/host")) }, nil},
		{"-v $HOME:/h", "mounts", "mounts[11].source", func(m cfg) { addMount(m, bind(home, "/h")) }, nil},
		{"symlink out of the workdir", "mounts", "mounts[11].source", func(m cfg) { addMount(m, bind(f.Workdir+"/root", "/h")) }, nil},
		{"dotdot out of the workdir", "mounts", "mounts[11].source", func(m cfg) { addMount(m, bind(f.Workdir+"/../home", "/h")) }, nil},
		{"bind without nosuid", "mounts", "mounts[11].options", func(m cfg) {
			addMount(m, cfg{"destination": "/w", "type": "bind", "source": f.Workdir, "options": []string{"rbind", "nodev"}})
		}, nil},
		{"bind with suid after nosuid", "mounts", "mounts[11].options", func(m cfg) { addMount(m, bind(f.Workdir, "/w", "suid")) }, nil},
		{"bind-nonrecursive of the workdir", "mounts", "mounts[11].options", func(m cfg) {
			addMount(m, cfg{"destination": "/w", "type": "bind", "source": f.Workdir, "options": []string{"bind", "nosuid", "nodev"}})
		}, nil},
		{"overlay mount", "mounts", "mounts[11].type", func(m cfg) {
			addMount(m, cfg{"destination": "/x", "type": "overlay", "source": "overlay", "options": []string{"lowerdir=/"}})
		}, nil},
		{"a volume with a mount of its own", "mounts", "mounts[8].source", nil, func(f *Facts) {
			real, _ := filepath.EvalSymlinks(f.Volumes[0])
			f.MountPoints = func() ([]string, error) { return []string{"/", real}, nil }
		}},
		{"a volume with a mount below it", "mounts", "mounts[8].source", nil, func(f *Facts) {
			real, _ := filepath.EvalSymlinks(f.Volumes[0])
			f.MountPoints = func() ([]string, error) { return []string{"/", real + "/sub"}, nil }
		}},
		// A volume's directory (or the container's own) made a symlink to
		// the storage by an engine of an earlier session, which the kept
		// storage would carry into every later one: the allowed place is
		// its own path, not where a link there leads.
		{"a volume directory that is a symlink into the storage", "mounts", "mounts[11].source", func(m cfg) {
			addMount(m, bind(f.Storage+"/overlay-containers/def/userdata", "/s"))
		}, func(f *Facts) {
			link := filepath.Join(filepath.Dir(f.Volumes[0]), "linked")
			os.Symlink(f.Storage, link)
			f.Volumes = append(slices.Clip(f.Volumes), link)
		}},
		{"writable sysfs", "mounts", "mounts[2].options", func(m cfg) { mount(m, 2)["options"] = []any{"nosuid", "noexec", "nodev", "rw"} }, nil},
		{"mounting the engine's proc", "mounts", "mounts[11].destination", func(m cfg) {
			addMount(m, cfg{"destination": "/p", "type": "proc", "source": "proc"})
		}, nil},
		{"seal writable", "mounts", "mounts[10]", func(m cfg) { mount(m, 10)["options"] = []any{"bind", "nosuid", "nodev"} }, nil},
		{"seal rw after ro", "mounts", "mounts[10]", func(m cfg) { mount(m, 10)["options"] = []any{"bind", "ro", "nosuid", "nodev", "rw"} }, nil},
		{"relative destination", "mounts", "mounts[11].destination", func(m cfg) { addMount(m, bind(f.Workdir, "proc/sys")) }, nil},
		{"bind over //proc", "proc", "mounts[11]", func(m cfg) { addMount(m, bind(f.Workdir, "//proc")) }, nil},
		{"another wrapper at an unclean path", "mounts", "mounts[11]", func(m cfg) {
			os.WriteFile(filepath.Join(f.Workdir, "fake"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755)
			addMount(m, bind(filepath.Join(f.Workdir, "fake"), "/.stockade/./stockade", "ro"))
		}, nil},
		{"rshared root", "propagation", "linux.rootfsPropagation", func(m cfg) { lin(m)["rootfsPropagation"] = "rshared" }, nil},
		{"shared bind", "propagation", "mounts[11].options", func(m cfg) { addMount(m, bind(f.Workdir, "/w", "shared")) }, nil},
		{"no hidepid", "proc", "mounts[0].options", func(m cfg) { mount(m, 0)["options"] = []any{"nosuid", "noexec", "nodev"} }, nil},
		{"hidepid=0 after hidepid=2", "proc", "mounts[0].options", func(m cfg) {
			mount(m, 0)["options"] = append(mount(m, 0)["options"].([]any), "hidepid=0")
		}, nil},
		{"exec after noexec on /proc", "proc", "mounts[0].options", func(m cfg) {
			mount(m, 0)["options"] = append(mount(m, 0)["options"].([]any), "exec")
		}, nil},
		{"bind over /proc/sys", "proc", "mounts[11]", func(m cfg) { addMount(m, bind(f.Workdir, "/proc/sys")) }, nil},
		{"no proc", "proc", "mounts", func(m cfg) { m["mounts"] = m["mounts"].([]any)[1:] }, nil},
		{"bind over the wrapper", "entrypoint", "mounts[11].destination", func(m cfg) { addMount(m, bind(f.Workdir, "/.stockade")) }, nil},
		{"bind over the root", "entrypoint", "mounts[11].destination", func(m cfg) { addMount(m, bind(f.Workdir, "/")) }, nil},
		{"entrypoint not sealed", "entrypoint", "process.args", func(m cfg) { proc(m)["args"] = []any{"sh"} }, nil},
		{"entrypoint with a wider policy", "entrypoint", "process.args", func(m cfg) {
			proc(m)["args"].([]any)[4] = `{"filesystem": {"allow": [{"path": "/", "access": "readwrite"}]}}`
		}, nil},
		{"entrypoint with the image's policy file", "entrypoint", "process.args", func(m cfg) {
			proc(m)["args"] = []any{SealPath, "seal", "--keep-caps", "--policy-file", "/policy.json", "--", "sh"}
		}, nil},
		{"startContainer hook", "hooks", "hooks.startContainer", func(m cfg) {
			m["hooks"] = cfg{"startContainer": []any{cfg{"path": "/bin/sh", "args": []any{"sh", "-c", "id"}}}}
		}, nil},
		{"createContainer hook", "hooks", "hooks.createContainer", func(m cfg) {
			m["hooks"] = cfg{"createContainer": []any{cfg{"path": "/bin/sh"}}}
		}, nil},
		{"--device /dev/sda", "devices", "linux.devices[0]", func(m cfg) {
			lin(m)["devices"] = []any{cfg{"path": "/dev/sda", "type": "b", "major": 8, "minor": 0}}
		}, nil},
		{"a device precreate set aside", "devices", "linux.devices", func(m cfg) {
			m["annotations"] = cfg{AskedDevices: `[{"path": "/dev/sda", "type": "b", "major": 8, "minor": 0}]`}
		}, nil},
		{"device cgroup allows all", "devices", "linux.resources.devices[2]", func(m cfg) {
			r := lin(m)["resources"].(cfg)
			r["devices"] = append(r["devices"].([]any), cfg{"allow": true, "access": "rwm"})
		}, nil},
		{"kcore unmasked", "masked_paths", "linux.maskedPaths", func(m cfg) { lin(m)["maskedPaths"] = []any{"/proc/acpi"} }, nil},
		{"/proc/sys writable", "readonly_paths", "linux.readonlyPaths", func(m cfg) { lin(m)["readonlyPaths"] = []any{} }, nil},
		{"crun's seccomp_bpf_data", "annotations", "annotations.run.oci.seccomp_bpf_data", func(m cfg) {
			m["annotations"] = cfg{"org.example": "x", "run.oci.seccomp_bpf_data": "BgAAAAAA/38="}
		}, nil},
		{"crun's seccomp plugins", "annotations", "annotations.run.oci.seccomp.plugins", func(m cfg) { m["annotations"] = cfg{"run.oci.seccomp.plugins": "/w/p.so"} }, nil},
		{"crun's wasm handler", "annotations", "annotations.module.wasm.image/variant", func(m cfg) { m["annotations"] = cfg{"module.wasm.image/variant": "compat"} }, nil},
		{"--sysctl kernel.*", "sysctl", "linux.sysctl", func(m cfg) { lin(m)["sysctl"] = cfg{"kernel.shm_rmid_forced": "1"} }, nil},
		{"core dumps", "rlimits", "process.rlimits[1]", func(m cfg) {
			proc(m)["rlimits"].([]any)[1].(cfg)["hard"] = 1
		}, nil},
		{"no core limit", "rlimits", "process.rlimits", func(m cfg) { proc(m)["rlimits"] = []any{} }, nil},
		{"a second core limit", "rlimits", "process.rlimits[2]", func(m cfg) {
			proc(m)["rlimits"] = append(proc(m)["rlimits"].([]any), cfg{"type": "RLIMIT_CORE", "hard": 1 << 40, "soft": 1 << 40})
		}, nil},
		{"tag with --require-digest", "image", "image", nil, func(f *Facts) { f.RequireDigest = true }},
		{"a digest the image does not have", "image", "image", nil, func(f *Facts) {
			f.RequireDigest = true
			f.Container = &Container{ID: "abc", Layer: "abc", Image: "registry.test/busybox@sha256:" + strings.Repeat("cd", 32),
				ImageDigests: []string{"sha256:" + strings.Repeat("ab", 32)}}
		}},
		{"a digest in an annotation", "image", "image", func(m cfg) {
			m["annotations"] = cfg{"io.stockade.image": "registry.test/busybox@sha256:" + strings.Repeat("ab", 32)}
		}, func(f *Facts) { f.RequireDigest = true }},
	}
	if err := Check(good, f); err != nil {
		t.Fatalf("the good config: %v", err)
	}
	digest := f
	digest.RequireDigest = true
	digest.Container = &Container{ID: "abc", Layer: "abc", Image: "registry.test/busybox@sha256:" + strings.Repeat("ab", 32),
		ImageDigests: []string{"sha256:" + strings.Repeat("ab", 32)}}
	if err := Check(good, digest); err != nil {
		t.Errorf("image by digest with --require-digest: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m cfg
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				tt.change(m)
			}
			ff := f
			if tt.facts != nil {
				tt.facts(&ff)
			}
			b, _ := json.Marshal(m)
			err := Check(b, ff)
			var r *Refusal
			if !errors.As(err, &r) || r.Check != tt.check || !strings.Contains(r.Field, tt.field) {
				t.Fatalf("Check = %v, want refused by %s at %s", err, tt.check, tt.field)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "check "+tt.check) {
				t.Errorf("refusal is not one line naming the check: %q", msg)
			}
		})
	}
}

// TestChecksCovered: every check of the table has a failing row above (by
// name), so a new check cannot come without its test.
func TestChecksCovered(t *testing.T) {
	src, err := os.ReadFile("ocihook_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !strings.Contains(string(src), `"`+c.name+`", "`) {
			t.Errorf("check %s has no failing row in TestCheck", c.name)
		}
	}
}

// TestFactsRequired: facts without a seccomp profile or with a relative
// directory stop both hooks, rather than letting precreate put no profile
// in place.
func TestFactsRequired(t *testing.T) {
	f, raw := session(t)
	for name, change := range map[string]func(f *Facts){
		"no seccomp":       func(f *Facts) { f.Seccomp = nil },
		"relative workdir": func(f *Facts) { f.Workdir = "work" },
		"relative volume":  func(f *Facts) { f.Volumes = []string{"pg"} },
		"no driver":        func(f *Facts) { f.Driver = "" },
		"driver with dots": func(f *Facts) { f.Driver = ".." },
		"no ids":           func(f *Facts) { f.GIDs = nil },
	} {
		ff := f
		change(&ff)
		if _, err := Precreate(raw, ff); err == nil || !strings.Contains(err.Error(), "the session's facts") {
			t.Errorf("%s: Precreate = %v", name, err)
		}
		if err := Check(raw, ff); err == nil || !strings.Contains(err.Error(), "the session's facts") {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
}

// TestPrecreateDropsContainerHooks: hooks that would run in the container
// outside seal are dropped; those the runtime runs in its own namespaces
// (stockade's createRuntime among them) are kept.
func TestPrecreateDropsContainerHooks(t *testing.T) {
	f, raw := session(t)
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["hooks"] = map[string]any{
		"startContainer":  []any{map[string]any{"path": "/bin/sh"}},
		"createContainer": []any{map[string]any{"path": "/bin/sh"}},
		"createRuntime":   []any{map[string]any{"path": "/usr/bin/stockade", "args": []any{"stockade", "hook", "createruntime"}}},
	}
	raw, _ = json.Marshal(m)
	out, err := Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(out, f); err != nil {
		t.Fatalf("precreated config refused: %v", err)
	}
	var got map[string]any
	json.Unmarshal(out, &got)
	hooks := got["hooks"].(map[string]any)
	if hooks["startContainer"] != nil || hooks["createContainer"] != nil || hooks["createRuntime"] == nil {
		t.Errorf("hooks after precreate: %v", hooks)
	}
}

func TestPinned(t *testing.T) {
	hex := strings.Repeat("0a", 32)
	for ref, want := range map[string]bool{
		"r.test/busybox@sha256:" + hex:                  true,
		"@sha256:" + hex:                                true,
		"r.test/busybox:1.36":                           false,
		"r.test/busybox@sha256:" + hex[:63]:             false,
		"r.test/busybox@sha256:" + strings.ToUpper(hex): false,
		"r.test/busybox@sha256:" + hex + "x":            false,
		"r.test/busybox@sha512:" + hex:                  false,
		"r.test/busybox:sha256:" + hex:                  false,
		"r.test/busybox@sha256:" + hex[:62] + "g0":      false,
	} {
		if got := pinned(ref); got != want {
			t.Errorf("pinned(%q) = %v, want %v", ref, got, want)
		}
	}
}

// TestPrecreateLeavesAsks: what the agent asked for beyond the policy
// survives precreate, so that the createRuntime check refuses it with its
// reason (a precreate hook's own error never reaches the agent) rather
// than the container running with less than it asked for, silently.
func TestPrecreateLeavesAsks(t *testing.T) {
	f, raw := session(t)
	type cfg = map[string]any
	for _, c := range []struct {
		name, check string
		change      func(m cfg)
	}{
		{"--cap-add SYS_ADMIN", "capabilities", func(m cfg) {
			c := m["process"].(cfg)["capabilities"].(cfg)
			c["bounding"] = append(c["bounding"].([]any), "CAP_SYS_ADMIN")
		}},
		{"seccomp=unconfined", "seccomp", func(m cfg) { delete(m["linux"].(cfg), "seccomp") }},
		{"--device", "devices", func(m cfg) {
			m["linux"].(cfg)["devices"] = []any{cfg{"path": "/dev/sda", "type": "b", "major": 8, "minor": 0}}
		}},
		{"-v ...:suid", "mounts", func(m cfg) {
			m["mounts"] = append(m["mounts"].([]any), cfg{"destination": "/w", "type": "bind", "source": f.Workdir, "options": []any{"rbind", "suid"}})
		}},
	} {
		var m cfg
		json.Unmarshal(raw, &m)
		c.change(m)
		in, _ := json.Marshal(m)
		out, err := Precreate(in, f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var r *Refusal
		if err := Check(out, f); !errors.As(err, &r) || r.Check != c.check {
			t.Errorf("%s: Check after precreate = %v, want refused by %s", c.name, err, c.check)
		}
	}
}

// TestPrecreateUserNamespace: a container without a user namespace gets
// one of its own, mapping the engine's ids onto themselves; one the
// config has is left as it is.
func TestPrecreateUserNamespace(t *testing.T) {
	f, raw := session(t)
	var m map[string]any
	json.Unmarshal(raw, &m)
	lin := m["linux"].(map[string]any)
	var ns []any
	for _, n := range lin["namespaces"].([]any) {
		if n.(map[string]any)["type"] != "user" {
			ns = append(ns, n)
		}
	}
	lin["namespaces"] = ns
	delete(lin, "uidMappings")
	delete(lin, "gidMappings")
	in, _ := json.Marshal(m)
	out, err := Precreate(in, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(out, f); err != nil {
		t.Fatalf("refused after precreate: %v", err)
	}
	var got struct {
		Linux struct {
			Namespaces  []Namespace
			UIDMappings []map[string]uint32 `json:"uidMappings"`
			GIDMappings []map[string]uint32 `json:"gidMappings"`
		}
	}
	json.Unmarshal(out, &got)
	want := func(ids []IDRange) []map[string]uint32 {
		var m []map[string]uint32
		for _, r := range ids {
			m = append(m, map[string]uint32{"containerID": r.Start, "hostID": r.Start, "size": r.Count})
		}
		return m
	}
	if !slices.ContainsFunc(got.Linux.Namespaces, func(n Namespace) bool { return n.Type == "user" && n.Path == "" }) ||
		!reflect.DeepEqual(got.Linux.UIDMappings, want(f.UIDs)) || !reflect.DeepEqual(got.Linux.GIDMappings, want(f.GIDs)) {
		t.Errorf("after precreate: %+v", got.Linux)
	}
	// The config's own namespace and maps stay.
	out, _ = Precreate(raw, f)
	json.Unmarshal(out, &got)
	if got.Linux.UIDMappings[0]["hostID"] != 1 {
		t.Errorf("precreate replaced the config's own maps: %+v", got.Linux.UIDMappings)
	}
}

// TestLookupContainer reads the engine's records as containers/storage
// writes them: the reference the container was made from, its layer, and
// its image's digests.
func TestLookupContainer(t *testing.T) {
	dir := t.TempDir()
	f := Facts{Storage: dir, Driver: "vfs"}
	id, layer, image := strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)
	digest := "sha256:" + strings.Repeat("4", 64)
	os.MkdirAll(filepath.Join(dir, "vfs-containers"), 0o755)
	os.MkdirAll(filepath.Join(dir, "vfs-images"), 0o755)
	meta, _ := json.Marshal(map[string]any{"image-name": "localhost/img@" + digest, "image-id": image, "name": "c1"})
	recs, _ := json.Marshal([]map[string]any{
		{"id": strings.Repeat("9", 64), "image": image, "layer": strings.Repeat("8", 64), "metadata": `{"image-name": "other:latest"}`},
		{"id": id, "names": []string{"c1"}, "image": image, "layer": layer, "metadata": string(meta)},
	})
	os.WriteFile(filepath.Join(dir, "vfs-containers", "containers.json"), recs, 0o600)
	imgs, _ := json.Marshal([]map[string]any{{"id": image, "digest": digest, "names": []string{"localhost/img:latest"}}})
	os.WriteFile(filepath.Join(dir, "vfs-images", "images.json"), imgs, 0o600)

	c, err := LookupContainer(f, id)
	if err != nil {
		t.Fatal(err)
	}
	want := Container{ID: id, Layer: layer, Image: "localhost/img@" + digest, ImageID: image, ImageDigests: []string{digest}}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("LookupContainer = %+v, want %+v", *c, want)
	}
	for _, bad := range []string{strings.Repeat("5", 64), "../../etc", ""} {
		if _, err := LookupContainer(f, bad); err == nil {
			t.Errorf("LookupContainer(%q) found a container", bad)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/tab\011x`: "/tab\tx", `/back\134slash`: `/back\slash`, `/plain`: "/plain", `/end\04`: `/end\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
