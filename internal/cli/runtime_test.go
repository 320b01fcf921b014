package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

// TestRuntimePolicy drives the engine's runtime as conmon and buildah call
// it: an exec gets a rewritten process file beside podman's, an exec
// --privileged is refused, a build's RUN container is checked, and the
// engine's own containers pass through to the hooks.
func TestRuntimePolicy(t *testing.T) {
	_, f, raw := hookSession(t)
	bundle := ocihook.Bundle(f, ctrID)
	config, err := ocihook.Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bundle, "config.json"), config, 0o644)
	execDir := filepath.Join(bundle, "exec1")
	os.MkdirAll(execDir, 0o755)
	proc := func(caps ...string) string {
		p := filepath.Join(execDir, "exec-process")
		b, _ := json.Marshal(map[string]any{"args": []string{"id"}, "user": map[string]any{"uid": 0},
			"capabilities": map[string]any{"bounding": caps}})
		os.WriteFile(p, b, 0o600)
		return p
	}
	call := func(args ...string) ocihook.RuntimeCall {
		c, err := ocihook.ParseRuntimeCall(args)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	p := proc("CAP_CHOWN")
	args, err := applyPolicy(call("--log", execDir+"/oci-log", "exec", "--process", p, "--detach", ctrID), f)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args, "--process")
	if i < 0 || args[i+1] == p || filepath.Dir(args[i+1]) != execDir || args[len(args)-1] != ctrID {
		t.Fatalf("exec args %q", args)
	}
	var got ocihook.Process
	b, _ := os.ReadFile(args[i+1])
	json.Unmarshal(b, &got)
	if len(got.Args) < 2 || got.Args[0] != ocihook.SealPath || !got.NoNewPrivileges {
		t.Errorf("rewritten process %s", b)
	}

	var r *ocihook.Refusal
	if _, err := applyPolicy(call("exec", "--process", proc("CAP_SYS_ADMIN"), ctrID), f); !errors.As(err, &r) || r.Check != "capabilities" {
		t.Errorf("exec --privileged: %v", err)
	}
	if _, err := applyPolicy(call("exec", "--process", proc(), "../"+ctrID), f); !errors.As(err, &r) || r.Check != "exec" {
		t.Errorf("exec in a container that is not the engine's: %v", err)
	}

	// The engine's own container: the hooks' to check, whatever its config.
	if _, err := applyPolicy(call("create", "--bundle", bundle, ctrID), f); err != nil {
		t.Errorf("the engine's container: %v", err)
	}
	// A build's container, elsewhere: checked here.
	build := t.TempDir()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.Decode(&m)
	delete(m["linux"].(map[string]any), "seccomp")
	b, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(build, "config.json"), b, 0o644)
	if _, err := applyPolicy(call("create", "--bundle", build, "--no-new-keyring", "buildah-buildah1"), f); !errors.As(err, &r) || r.Check != "seccomp" {
		t.Errorf("a build's container without seccomp: %v", err)
	}
	// An annotation the runtime acts on is refused for every container,
	// the engine's own too: the runtime reads it before any hook runs.
	for _, dir := range []string{bundle, build} {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.UseNumber()
		dec.Decode(&m)
		m["annotations"] = map[string]any{"run.oci.seccomp_bpf_data": "BgAAAAAA/38="}
		b, _ := json.Marshal(m)
		os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
		id := ctrID
		if dir == build {
			id = "buildah-buildah1"
		}
		if _, err := applyPolicy(call("create", "--bundle", dir, id), f); !errors.As(err, &r) || r.Check != "annotations" || r.Field != "annotations.run.oci.seccomp_bpf_data" {
			t.Errorf("%s: a container with crun's seccomp_bpf_data: %v", dir, err)
		}
		if _, err := applyPolicy(call("run", "--bundle", dir, id), f); !errors.As(err, &r) || r.Check != "annotations" {
			t.Errorf("%s: run with crun's seccomp_bpf_data: %v", dir, err)
		}
	}
	for _, cmd := range []string{"checkpoint", "restore"} {
		if _, err := applyPolicy(call(cmd, "--image-path", "/x", ctrID), f); !errors.As(err, &r) || r.Check != "checkpoint" {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	// Other commands pass as they are.
	if args, err := applyPolicy(call("--log", "/l", "start", ctrID), f); err != nil || !slices.Equal(args, []string{"--log", "/l", "start", ctrID}) {
		t.Errorf("start: %q, %v", args, err)
	}
}
