package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/ocihook"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// seal runs `stockade seal ARGS...` with the policy on descriptor 3 (when
// fd3 is not empty) and returns its exit status, the signal that killed it
// (if any), stdout and stderr.
func seal(t *testing.T, fd3 string, args ...string) (int, syscall.Signal, string, string) {
	t.Helper()
	if err := landlock.CheckABI(landlock.ABI()); err != nil {
		if os.Getenv("STOCKADE_MUST_WORK") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cmd := exec.Command(bin, append([]string{"seal"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if fd3 != "" {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() { w.WriteString(fd3); w.Close() }()
		cmd.ExtraFiles = []*os.File{r}
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return -1, ws.Signal(), stdout.String(), stderr.String()
		}
		return ws.ExitStatus(), 0, stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, 0, stdout.String(), stderr.String()
}

func sealPolicy(work, syscalls string) string {
	p := `{"filesystem": {"allow": [{"path": "` + work + `", "access": "readwrite"},
		{"path": "/usr", "access": "execute"}, {"path": "/etc", "access": "read"},
		{"path": "/dev/null", "access": "write"}], "deny": ["/etc/hostname"]}`
	if syscalls != "" {
		p += `, "syscalls": ` + syscalls
	}
	return p + "}"
}

// TestSealCommand drives `stockade seal` as a user of SafeClaw's helper
// would: the policy on descriptor 3, the command's own exit status passed
// through, seal's own failures as its exit statuses with one line on
// stderr, and an undeclared system call killing the command.
func TestSealCommand(t *testing.T) {
	work := t.TempDir()
	code, sig, stdout, stderr := seal(t, sealPolicy(work, ""), "--", "sh", "-c",
		`echo data > `+work+`/f && cat `+work+`/f; cat /etc/hostname 2>/dev/null || echo denied; echo x > /tmp/stockade-seal-e2e 2>/dev/null || echo denied; exit 3`)
	if code != 3 || sig != 0 || stdout != "data\ndenied\ndenied\n" {
		t.Errorf("exit %d signal %v stdout %q stderr %q", code, sig, stdout, stderr)
	}

	file := filepath.Join(t.TempDir(), "policy.json")
	os.WriteFile(file, []byte(`{"filesystem": {"allow": [{"path": "/usr", "access": "rwx"}]}}`), 0o600)
	code, _, _, stderr = seal(t, "", "--policy-file", file, "--", "true")
	if code != 70 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, `access "rwx"`) {
		t.Errorf("bad access: exit %d, stderr %q", code, stderr)
	}
	code, _, _, stderr = seal(t, sealPolicy(work, ""), "--", "/nonexistent/cmd")
	if code != 74 || !strings.HasPrefix(stderr, "stockade seal: ") {
		t.Errorf("missing command: exit %d, stderr %q", code, stderr)
	}

	arch, err := seccomp.NativeArch()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range seccomp.Syscalls(arch) {
		if n != "uname" {
			names = append(names, `"`+n+`"`)
		}
	}
	allow := `{"allow": [` + strings.Join(names, ",") + `], "defaultDeny": true}`
	code, sig, _, stderr = seal(t, "", "--policy", sealPolicy(work, allow), "--", "uname")
	if sig != syscall.SIGSYS {
		t.Errorf("uname left out of the allowlist: exit %d signal %v, stderr %q; want SIGSYS", code, sig, stderr)
	}
	code, sig, stdout, _ = seal(t, "", "--policy", sealPolicy(work, strings.Replace(allow, `"allow": [`, `"allow": ["uname",`, 1)), "--", "uname")
	if code != 0 || sig != 0 || stdout != "Linux\n" {
		t.Errorf("uname listed: exit %d signal %v stdout %q", code, sig, stdout)
	}
}

// TestSealContainerPolicy runs seal as a container's entrypoint runs under
// it: --keep-caps, and the policy precreate derives from the container's
// mounts. With a read-only root, the writable bind takes writes; the
// read-only one and the rest of the tree do not, though all can be read
// and run.
func TestSealContainerPolicy(t *testing.T) {
	rw, ro := t.TempDir(), t.TempDir()
	os.Chmod(ro, 0o777)
	spec := ocihook.Spec{
		Root: &ocihook.Root{Path: "/", Readonly: true},
		Mounts: []ocihook.Mount{
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs"},
			{Destination: rw, Type: "bind", Source: rw, Options: []string{"rbind", "nosuid", "nodev"}},
			{Destination: ro, Type: "bind", Source: ro, Options: []string{"rbind", "ro"}},
		},
	}
	policy, err := json.Marshal(ocihook.Policy(&spec))
	if err != nil {
		t.Fatal(err)
	}
	code, sig, stdout, stderr := seal(t, "", "--keep-caps", "--policy", string(policy), "--", "sh", "-c",
		`echo x > `+rw+`/f && echo wrote; echo x > `+ro+`/f 2>/dev/null || echo denied; `+
			`echo x > `+filepath.Dir(rw)+`/stockade-seal-e2e 2>/dev/null || echo denied; cat /etc/hostname >/dev/null && echo read`)
	if code != 0 || sig != 0 || stdout != "wrote\ndenied\ndenied\nread\n" {
		t.Errorf("exit %d signal %v stdout %q stderr %q", code, sig, stdout, stderr)
	}
}
