package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

// hookSession writes a session's facts and returns them with podman's
// config of a container binding the workdir.
func hookSession(t *testing.T) (facts string, f ocihook.Facts, config []byte) {
	t.Helper()
	base := t.TempDir()
	f = ocihook.Facts{
		Workdir: filepath.Join(base, "work"), Storage: filepath.Join(base, "storage"),
		Volumes: []string{filepath.Join(base, "vol")}, UID: 1000, GID: 1000,
		Seccomp:    json.RawMessage(`{"defaultAction": "SCMP_ACT_ERRNO"}`),
		SealSource: filepath.Join(base, "stockade"),
		// The test's network namespace path is a stand-in for the
		// engine's per-container one; none of the engine's is named.
		EngineNamespaces: map[string]string{"network": "none"},
	}
	for _, d := range []string{f.Workdir, f.Volumes[0], filepath.Join(f.Storage, "overlay/abc/merged"), filepath.Join(f.Storage, "overlay-containers/abc/userdata")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(f.Storage, "overlay-containers/abc/userdata/hosts"), nil, 0o644)
	b, _ := json.Marshal(f)
	facts = filepath.Join(base, "facts.json")
	os.WriteFile(facts, b, 0o644)
	raw, err := os.ReadFile("../ocihook/testdata/podman.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.NewReplacer("@STORAGE@", f.Storage, "@WORK@", f.Workdir, "@VOLUME@", f.Volumes[0],
		"/run/user/1000/netns/netns-abc", "/proc/self/ns/net").Replace(string(raw)))
	return facts, f, raw
}

// TestHookContract drives the hooks as the engine does: precreate gets the
// config on stdin and answers the config to use on stdout; createruntime
// gets the OCI state on stdin, reads the bundle's config.json, and
// accepts the rewritten config but refuses podman's own with one line on
// stderr and a non-zero status.
func TestHookContract(t *testing.T) {
	facts, _, raw := hookSession(t)
	var out bytes.Buffer
	pre := hookPrecreateCmd{hookFacts{facts}}
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
			bundle := t.TempDir()
			os.WriteFile(filepath.Join(bundle, "config.json"), tt.config, 0o644)
			st, _ := json.Marshal(map[string]any{"ociVersion": "1.2.0", "id": "abc", "status": "creating", "pid": 1, "bundle": bundle})
			code, stderr := runWithStdin(t, st, "stockade", "hook", "createruntime", "--facts", facts)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || strings.Count(stderr, "\n") > 1 {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
	code, stderr := runWithStdin(t, []byte(`{"id": "abc"}`), "stockade", "hook", "createruntime", "--facts", facts)
	if code == 0 || !strings.Contains(stderr, "bundle") {
		t.Errorf("state without a bundle: exit %d, %q", code, stderr)
	}
	var r *ocihook.Refusal
	cr := hookCreateRuntimeCmd{hookFacts{facts}}
	if err := cr.run(strings.NewReader(`{"bundle": "/nonexistent"}`)); err == nil || errors.As(err, &r) {
		t.Errorf("missing bundle: %v", err)
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
