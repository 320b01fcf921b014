package ocihook

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestParseRuntimeCall reads the calls podman, conmon and buildah make of
// the runtime, as seen on this machine.
func TestParseRuntimeCall(t *testing.T) {
	for _, c := range []struct {
		args         []string
		command, log string
		commandArgs  []string
		wantErr      bool
	}{
		{[]string{"--log-format=json", "--log", "/run/u/oci-log", "--cgroup-manager", "disabled", "create", "--bundle", "/b", "id"},
			"create", "/run/u/oci-log", []string{"--bundle", "/b", "id"}, false},
		{[]string{"start", "id"}, "start", "", []string{"id"}, false},
		{[]string{"--log=/l", "exec", "--process", "/p", "id"}, "exec", "/l", []string{"--process", "/p", "id"}, false},
		{[]string{"--log"}, "", "", nil, true},
		{[]string{"--debug"}, "", "", nil, true},
	} {
		got, err := ParseRuntimeCall(c.args)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if err == nil && (got.Command != c.command || got.Log != c.log || !slices.Equal(got.CommandArgs(), c.commandArgs)) {
			t.Errorf("%q: %+v, args %q", c.args, got, got.CommandArgs())
		}
	}
}

// TestParseExec: the process file is found, and what would give the
// process more than its file says, or run a command without one, is
// refused.
func TestParseExec(t *testing.T) {
	args := []string{"--pid-file", "/x/pid", "--process", "/x/proc", "--detach", "ctr"}
	e, err := ParseExec(args)
	if err != nil || e.Process != "/x/proc" || e.Container != "ctr" {
		t.Fatalf("ParseExec = %+v, %v", e, err)
	}
	if got := e.WithProcess(args, "/y"); !slices.Equal(got, []string{"--pid-file", "/x/pid", "--process", "/y", "--detach", "ctr"}) {
		t.Errorf("WithProcess = %q", got)
	}
	e, _ = ParseExec([]string{"--process=/x/proc", "ctr"})
	if got := e.WithProcess([]string{"--process=/x/proc", "ctr"}, "/y"); got[0] != "--process=/y" {
		t.Errorf("WithProcess of --process= = %q", got)
	}
	for _, bad := range [][]string{
		{"--cap", "CAP_SYS_ADMIN", "--process", "/p", "ctr"},
		{"-c", "CAP_SYS_ADMIN", "--process", "/p", "ctr"},
		{"--process", "/p", "--apparmor=unconfined", "ctr"},
		{"ctr", "sh"},
		{"--process", "/p"},
		{"--process"},
	} {
		if _, err := ParseExec(bad); err == nil {
			t.Errorf("ParseExec(%q) accepted", bad)
		}
	}
}

// TestExec: podman exec --privileged is refused; an ordinary exec runs as
// the sandbox user, with no new privileges, under the seal of the
// container's policy (not one it brings).
func TestExec(t *testing.T) {
	f, raw := session(t)
	container, err := Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	process := func(caps []string, args ...string) []byte {
		b, _ := json.Marshal(map[string]any{
			"user": map[string]any{"uid": 1234, "gid": 1234, "additionalGids": []int{0}}, "args": args,
			"capabilities":    map[string]any{"bounding": caps, "effective": caps, "permitted": caps},
			"noNewPrivileges": false, "apparmorProfile": "unconfined", "cwd": "/",
		})
		return b
	}
	var r *Refusal
	if _, err := Exec(process([]string{"CAP_CHOWN", "CAP_SYS_ADMIN"}, "id"), container, f); !errors.As(err, &r) || r.Check != "capabilities" {
		t.Errorf("exec --privileged: %v", err)
	}
	out, err := Exec(process(DefaultCaps, SealPath, "seal", "--policy", `{"filesystem":{"allow":[{"path":"/","access":"readwrite"}]}}`, "--", "id"), container, f)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		User            User
		Args            []string
		NoNewPrivileges bool
		ApparmorProfile string
		Cwd             string
	}
	json.Unmarshal(out, &p)
	var spec Spec
	json.Unmarshal(container, &spec)
	policy, _ := json.Marshal(Policy(&spec))
	if p.User.UID != f.UID || p.User.GID != f.GID || len(p.User.AdditionalGids) != 0 || !p.NoNewPrivileges || p.ApparmorProfile != "" || p.Cwd != "/" {
		t.Errorf("exec process: %s", out)
	}
	if want := []string{SealPath, "seal", "--keep-caps", "--policy", string(policy), "--", "id"}; !slices.Equal(p.Args, want) {
		t.Errorf("exec args %q, want %q", p.Args, want)
	}
	if _, err := Exec([]byte(`{"args": ["id"], "Args": ["sh"]}`), container, f); !errors.As(err, &r) || r.Check != "exec" {
		t.Errorf("exec with a twin key: %v", err)
	}
}

// TestCheckBuild: a build's RUN container under buildah's defaults passes;
// what podman build --cap-add, --security-opt seccomp=unconfined, --sysctl
// or --network ns:PATH asks for is refused.
func TestCheckBuild(t *testing.T) {
	caps := append([]string{}, DefaultCaps...)
	build := func(change func(m map[string]any)) []byte {
		m := map[string]any{
			"process": map[string]any{"args": []string{"/bin/sh", "-c", "make"},
				"capabilities": map[string]any{"bounding": caps, "effective": caps, "permitted": caps, "ambient": caps, "inheritable": caps}},
			"linux": map[string]any{"seccomp": map[string]any{"defaultAction": "SCMP_ACT_ERRNO"},
				"resources":  map[string]any{"devices": []any{map[string]any{"allow": false, "access": "rwm"}}},
				"namespaces": []any{map[string]any{"type": "pid"}, map[string]any{"type": "network"}, map[string]any{"type": "mount"}}},
		}
		if change != nil {
			change(m)
		}
		b, _ := json.Marshal(m)
		return b
	}
	if err := CheckBuild(build(nil)); err != nil {
		t.Fatalf("buildah's defaults: %v", err)
	}
	for name, c := range map[string]struct {
		check  string
		change func(m map[string]any)
	}{
		"--cap-add SYS_ADMIN": {"capabilities", func(m map[string]any) {
			m["process"].(map[string]any)["capabilities"].(map[string]any)["ambient"] = []string{"CAP_SYS_ADMIN"}
		}},
		"seccomp=unconfined": {"seccomp", func(m map[string]any) { delete(m["linux"].(map[string]any), "seccomp") }},
		"--sysctl kernel.*":  {"sysctl", func(m map[string]any) { m["linux"].(map[string]any)["sysctl"] = map[string]string{"kernel.x": "1"} }},
		"--network ns:PATH": {"namespaces", func(m map[string]any) {
			m["linux"].(map[string]any)["namespaces"] = []any{map[string]any{"type": "network", "path": "/proc/1/ns/net"}}
		}},
		"--pid host": {"namespaces", func(m map[string]any) {
			m["linux"].(map[string]any)["namespaces"] = []any{map[string]any{"type": "network"}, map[string]any{"type": "mount"}}
		}},
		"--pid ns:PATH": {"namespaces", func(m map[string]any) {
			m["linux"].(map[string]any)["namespaces"] = []any{map[string]any{"type": "pid", "path": "/proc/1/ns/pid"}, map[string]any{"type": "network"}}
		}},
		"a device": {"devices", func(m map[string]any) {
			m["linux"].(map[string]any)["devices"] = []any{map[string]any{"path": "/dev/sda", "type": "b", "major": 8, "minor": 0}}
		}},
	} {
		var r *Refusal
		if err := CheckBuild(build(c.change)); !errors.As(err, &r) || r.Check != c.check || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want refused by %s", name, err, c.check)
		}
	}
}

// TestIsolateBuild: a build step with no network namespace (podman build
// --network host; every step of a Docker API build) gets a new one, and
// keeps every other field as it was; one with a network namespace is left
// alone.
func TestIsolateBuild(t *testing.T) {
	host := []byte(`{"ociVersion":"1.0.2","process":{"args":["/bin/sh","-c","make"],"x-unknown":[1,2]},` +
		`"linux":{"namespaces":[{"type":"pid"},{"type":"mount","path":""}],"seccomp":{"defaultAction":"SCMP_ACT_ERRNO"}}}`)
	out, changed, err := IsolateBuild(host)
	if err != nil || !changed {
		t.Fatalf("IsolateBuild(no network namespace) = %s, %v, %v; want a change", out, changed, err)
	}
	var got, want map[string]any
	json.Unmarshal(out, &got)
	json.Unmarshal(host, &want)
	want["linux"].(map[string]any)["namespaces"] = append(want["linux"].(map[string]any)["namespaces"].([]any), map[string]any{"type": "network"})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IsolateBuild:\n got %s\nwant the input with a network namespace added", out)
	}
	if err := CheckBuild(out); err != nil {
		t.Errorf("the isolated config is refused: %v", err)
	}
	for _, c := range [][]byte{
		[]byte(`{"linux":{"namespaces":[{"type":"network"}]}}`),
		[]byte(`{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/run/netns/x"}]}}`),
	} {
		if out, changed, err := IsolateBuild(c); err != nil || changed || string(out) != string(c) {
			t.Errorf("IsolateBuild(%s) = %s, %v, %v; want it unchanged", c, out, changed, err)
		}
	}
	// No linux section at all: one is made.
	if out, changed, err := IsolateBuild([]byte(`{"process":{}}`)); err != nil || !changed || !strings.Contains(string(out), `"linux":{"namespaces":[{"type":"network"}]}`) {
		t.Errorf("IsolateBuild(no linux) = %s, %v, %v", out, changed, err)
	}
}

// TestPrivateBuild: a build step's shared mounts (buildah's cache mount)
// become private, and nothing else changes; a config without them is
// left as it is; duplicate keys are refused first.
func TestPrivateBuild(t *testing.T) {
	in := `{"ociVersion":"1.0.2","mounts":[{"destination":"/c","type":"bind","source":"/run/engine/tmp/b/mnt/t0","options":["shared","rw","bind","rbind"]},` +
		`{"destination":"/s","type":"bind","source":"/x","options":["rshared"]},{"destination":"/proc","type":"proc","source":"proc"}],"linux":{"namespaces":[{"type":"pid"}]}}`
	out, changed, err := PrivateBuild([]byte(in))
	if err != nil || !changed {
		t.Fatalf("PrivateBuild: %v, changed %v", err, changed)
	}
	var got, want map[string]any
	json.Unmarshal(out, &got)
	json.Unmarshal([]byte(strings.NewReplacer(`"shared"`, `"private"`, `"rshared"`, `"rprivate"`).Replace(in)), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s", out)
	}
	if err := CheckBuild(out); err != nil && strings.Contains(err.Error(), "propagation") {
		t.Errorf("still refused: %v", err)
	}
	plain := `{"mounts":[{"destination":"/p","type":"bind","source":"/y","options":["rprivate"]}]}`
	if out, changed, err := PrivateBuild([]byte(plain)); err != nil || changed || string(out) != plain {
		t.Errorf("a private config: %s, %v, %v", out, changed, err)
	}
	var r *Refusal
	if _, _, err := PrivateBuild([]byte(`{"mounts":[],"mounts":[{"destination":"/c","options":["shared"]}]}`)); !errors.As(err, &r) || r.Check != "config" {
		t.Errorf("duplicate keys: %v", err)
	}
}
