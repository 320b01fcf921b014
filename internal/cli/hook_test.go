package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

// ctrID and ctrLayer are the test container's ids in the engine's storage.
var ctrID, ctrLayer = strings.Repeat("a", 64), strings.Repeat("b", 64)

// hookSession writes a session's facts and the engine's record of one
// container, and returns them with podman's config of that container
// binding the workdir.
func hookSession(t *testing.T) (facts string, f ocihook.Facts, config []byte) {
	t.Helper()
	base := t.TempDir()
	f = ocihook.Facts{
		Workdir: filepath.Join(base, "work"), Storage: filepath.Join(base, "storage"), RunRoot: filepath.Join(base, "run"),
		Driver: "overlay", Volumes: []string{filepath.Join(base, "vol")}, UID: 1000, GID: 1000,
		UIDs: []ocihook.IDRange{{Start: 0, Count: 65536}}, GIDs: []ocihook.IDRange{{Start: 0, Count: 65536}},
		Seccomp:    json.RawMessage(`{"defaultAction": "SCMP_ACT_ERRNO"}`),
		SealSource: filepath.Join(base, "stockade"),
		// The test's network namespace path is a stand-in for the
		// engine's per-container one; none of the engine's is named.
		EngineNamespaces: map[string]string{"network": "none"},
	}
	userdata := filepath.Join(f.Storage, "overlay-containers", ctrID, "userdata")
	for _, d := range []string{f.Workdir, f.Volumes[0], filepath.Join(f.Storage, "overlay", ctrLayer, "merged"), userdata,
		filepath.Join(f.RunRoot, "overlay-containers", ctrID, "userdata"), filepath.Join(f.Storage, "overlay-images")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(userdata, "hosts"), nil, 0o644)
	os.WriteFile(filepath.Join(f.RunRoot, "overlay-containers", ctrID, "userdata", "hostname"), nil, 0o644)
	writeRecord(t, f, "registry.test/busybox:1")
	b, _ := json.Marshal(f)
	facts = filepath.Join(base, "facts.json")
	os.WriteFile(facts, b, 0o644)
	raw, err := os.ReadFile("../ocihook/testdata/podman.json")
	if err != nil {
		t.Fatal(err)
	}
	f.Container = &ocihook.Container{ID: ctrID, Layer: ctrLayer, Image: "registry.test/busybox:1"}
	raw = []byte(strings.NewReplacer("@STORAGE@", f.Storage, "@RUN@", f.RunRoot, "@WORK@", f.Workdir, "@VOLUME@", f.Volumes[0],
		"overlay-containers/abc/", "overlay-containers/"+ctrID+"/", "overlay/abc/", "overlay/"+ctrLayer+"/",
		"/run/user/1000/netns/netns-abc", "/proc/self/ns/net").Replace(string(raw)))
	return facts, f, raw
}

// writeRecord writes the engine's record of the test container, made from
// the image reference ref, whose image has one digest (imageDigest).
func writeRecord(t *testing.T, f ocihook.Facts, ref string) {
	t.Helper()
	image := strings.Repeat("c", 64)
	meta, _ := json.Marshal(map[string]string{"image-name": ref})
	recs, _ := json.Marshal([]map[string]any{{"id": ctrID, "image": image, "layer": ctrLayer, "metadata": string(meta)}})
	imgs, _ := json.Marshal([]map[string]any{{"id": image, "digest": imageDigest}})
	if os.WriteFile(filepath.Join(f.Storage, "overlay-containers", "containers.json"), recs, 0o644) != nil ||
		os.WriteFile(filepath.Join(f.Storage, "overlay-images", "images.json"), imgs, 0o644) != nil {
		t.Fatal("writing the engine's records")
	}
}

var imageDigest = "sha256:" + strings.Repeat("d", 64)

// TestHookContract drives the hooks as the engine does: precreate gets the
// config on stdin and answers the config to use on stdout; createruntime
// gets the OCI state on stdin, reads the bundle's config.json, and
// accepts the rewritten config but refuses podman's own with one line on
// stderr and a non-zero status.
func TestHookContract(t *testing.T) {
	facts, _, raw := hookSession(t)
	var out bytes.Buffer
	pre := hookPrecreateCmd{hookFacts{Facts: facts}}
	if err := pre.run(bytes.NewReader(raw), &out); err != nil {
		t.Fatal(err)
	}
	var s ocihook.Spec
	if err := json.Unmarshal(out.Bytes(), &s); err != nil || s.Process.Args[0] != ocihook.SealPath {
		t.Fatalf("precreate wrote %s (%v)", out.Bytes(), err)
	}
	for _, tt := range []struct {
		name   string
		config []byte
		code   int
		stderr string
	}{
		{"rewritten", out.Bytes(), 0, ""},
		{"podman's own", raw, 1, "stockade refused the container (check user): process.user: uid 0 gid 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := createRuntime(t, facts, tt.config)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || strings.Count(stderr, "\n") > 1 {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
	code, stderr := runWithStdin(t, []byte(`{"bundle": "/"}`), "stockade", "hook", "createruntime", "--facts", facts)
	if code == 0 || !strings.Contains(stderr, "id") {
		t.Errorf("state without an id: exit %d, %q", code, stderr)
	}
	code, stderr = runWithStdin(t, []byte(`{"id": "../../x"}`), "stockade", "hook", "createruntime", "--facts", facts)
	if code != 1 || !strings.Contains(stderr, "(check container)") {
		t.Errorf("state with a path for an id: exit %d, %q", code, stderr)
	}
	var r *ocihook.Refusal
	cr := hookCreateRuntimeCmd{hookFacts{Facts: facts}}
	if err := cr.run(strings.NewReader(`{"id": "`+strings.Repeat("f", 64)+`"}`), &state{}); err == nil || errors.As(err, &r) {
		t.Errorf("no bundle: %v", err)
	}
}

// runWithStdin runs the command line with stdin from data and returns the
// exit status and what it wrote on stderr.
func runWithStdin(t *testing.T, data []byte, args ...string) (int, string) {
	code, _, stderr := runIO(t, data, args...)
	return code, stderr
}

// runIO runs the command line with stdin from data and returns the exit
// status and what it wrote on stdout and stderr.
func runIO(t *testing.T, data []byte, args ...string) (int, string, string) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "stdin")
	os.WriteFile(in, data, 0o644)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	errf, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	outf, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer outf.Close()
	oldIn, oldOut, oldErr := os.Stdin, os.Stdout, os.Stderr
	os.Stdin, os.Stdout, os.Stderr = f, outf, errf
	code := Run(args)
	os.Stdin, os.Stdout, os.Stderr = oldIn, oldOut, oldErr
	stdout, _ := os.ReadFile(outf.Name())
	stderr, _ := os.ReadFile(errf.Name())
	return code, string(stdout), string(stderr)
}

// TestHookPrecreateStdout: through the command line, precreate answers
// the rewritten config on stdout and nothing else.
func TestHookPrecreateStdout(t *testing.T) {
	facts, f, raw := hookSession(t)
	code, stdout, stderr := runIO(t, raw, "stockade", "hook", "precreate", "--facts", facts)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if err := ocihook.Check([]byte(stdout), f); err != nil {
		t.Errorf("precreate's stdout does not pass the checks: %v\n%s", err, stdout)
	}
	code, stdout, stderr = runIO(t, []byte("not json"), "stockade", "hook", "precreate", "--facts", facts)
	if code == 0 || stdout != "" || !strings.Contains(stderr, "reading the container's config") {
		t.Errorf("bad config: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestHookHidden: the hooks are not in the main help; seal is.
func TestHookHidden(t *testing.T) {
	code, stdout, _ := runIO(t, nil, "stockade", "--help")
	if code != 0 || strings.Contains(stdout, "hook") || !strings.Contains(stdout, "seal") {
		t.Errorf("stockade --help: exit %d\n%s", code, stdout)
	}
}

// createRuntime runs the createruntime hook on config as the runtime does
// and returns its exit status and stderr.
func createRuntime(t *testing.T, facts string, config []byte, extra ...string) (int, string) {
	t.Helper()
	var f ocihook.Facts
	b, _ := os.ReadFile(facts)
	json.Unmarshal(b, &f)
	os.WriteFile(filepath.Join(ocihook.Bundle(f, ctrID), "config.json"), config, 0o644)
	// No runtime here: the container's mounts are what the checks judged,
	// of sources that exist.
	if _, err := os.Stat(f.SealSource); err != nil {
		os.WriteFile(f.SealSource, nil, 0o755)
	}
	defer func(old func(int) ([]byte, error)) { containerMountinfo = old }(containerMountinfo)
	containerMountinfo = func(int) ([]byte, error) {
		own, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		return ocihook.MountedAsChecked(config, own)
	}
	// The state's bundle is not where the config is read from.
	st, _ := json.Marshal(map[string]any{"ociVersion": "1.2.0", "id": ctrID, "status": "creating", "pid": 1, "bundle": "/"})
	return runWithStdin(t, st, append([]string{"stockade", "hook", "createruntime", "--facts", facts}, extra...)...)
}

// TestHookRequireDigest: under --require-digest the image's reference is
// the one the engine recorded when it made the container; a digest the
// agent writes into the config's annotations counts for nothing.
func TestHookRequireDigest(t *testing.T) {
	facts, f, raw := hookSession(t)
	f.RequireDigest = true
	b, _ := json.Marshal(f)
	os.WriteFile(facts, b, 0o644)
	var out bytes.Buffer
	if err := (&hookPrecreateCmd{hookFacts{Facts: facts}}).run(bytes.NewReader(raw), &out); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(out.Bytes(), &m)
	m["annotations"] = map[string]any{"io.stockade.image": "registry.test/busybox@" + imageDigest,
		"org.opencontainers.image.ref.name": "registry.test/busybox@" + imageDigest}
	spoofed, _ := json.Marshal(m)
	for _, c := range []struct {
		name, ref string
		config    []byte
		code      int
		stderr    string
	}{
		{"tag", "registry.test/busybox:1", out.Bytes(), 1, "(check image)"},
		{"tag, digest in the annotations", "registry.test/busybox:1", spoofed, 1, "(check image)"},
		{"a digest the image does not have", "registry.test/busybox@sha256:" + strings.Repeat("e", 64), out.Bytes(), 1, "(check image)"},
		{"the image's digest", "registry.test/busybox@" + imageDigest, out.Bytes(), 0, ""},
	} {
		writeRecord(t, f, c.ref)
		if code, stderr := createRuntime(t, facts, c.config); code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.name, code, stderr, c.code, c.stderr)
		}
	}
}

// TestHookReportsRefusal: a refusal goes to the session's events socket
// as one line naming the check, the field and the container; and it takes
// the place of the runtime's log, where the engine reads the runtime's
// error from.
func TestHookReportsRefusal(t *testing.T) {
	facts, f, raw := hookSession(t)
	runtimeLog := ocihook.RuntimeLog(f, ctrID)
	os.WriteFile(runtimeLog, []byte(`{"msg": "an earlier line"}`+"\n"), 0o600)
	sock := filepath.Join(t.TempDir(), "events.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan ocihook.Report, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var r ocihook.Report
		json.NewDecoder(conn).Decode(&r)
		got <- r
	}()
	if code, _ := createRuntime(t, facts, raw, "--events", sock); code != 1 {
		t.Fatalf("podman's own config: exit %d, want 1", code)
	}
	select {
	case r := <-got:
		if r.Check != "user" || r.Field != "process.user" || r.Container != ctrID || r.Image != "registry.test/busybox:1" {
			t.Errorf("report %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no report on the events socket")
	}
	var logged struct{ Msg string }
	b, _ := os.ReadFile(runtimeLog)
	if err := json.Unmarshal(b, &logged); err != nil || !strings.HasPrefix(logged.Msg, "stockade refused the container (check user)") {
		t.Errorf("the runtime's log holds %q (%v)", b, err)
	}
}
