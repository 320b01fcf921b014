//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// Landlock cannot be undone, so every case runs in a re-executed copy of the
// test binary: the parent only reads what the child reports.
// restrict enforces the tiers on the test process, on every thread, as the
// sandbox's init does between clone and execve: the kernel's word on what
// Compile makes.
func restrictTiers(t Tiers) error {
	abi := ABI()
	if err := CheckABI(abi); err != nil {
		return err
	}
	return Compile(t, abi).restrict()
}

func (r Ruleset) restrict() error {
	fd, err := r.create()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("enforcing the landlock ruleset: %w", os.NewSyscallError("landlock_restrict_self", e))
	}
	return nil
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("STOCKADE_LANDLOCK_CHILD"); dir != "" {
		os.Exit(child(dir))
	}
	os.Exit(m.Run())
}

// child restricts itself to the tiers over dir and prints one line per probe.
func child(dir string) int {
	syscall.AllThreadsSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0)
	err := restrictTiers(Tiers{
		ReadExec:  []string{"/usr", "/bin"},
		ReadOnly:  []string{filepath.Join(dir, "ro")},
		WriteExec: []string{filepath.Join(dir, "rw")},
	})
	if err != nil {
		os.Stdout.WriteString("restrict: " + err.Error() + "\n")
		return 1
	}
	probes := []func() error{
		func() error { return os.WriteFile(filepath.Join(dir, "rw", "new"), []byte("x"), 0o644) },
		func() error { _, err := os.ReadFile(filepath.Join(dir, "ro", "file")); return err },
		func() error { return os.WriteFile(filepath.Join(dir, "ro", "file"), []byte("x"), 0o644) },
		func() error { return os.Truncate(filepath.Join(dir, "ro", "file"), 0) },
		func() error { _, err := os.ReadFile(filepath.Join(dir, "outside")); return err },
		func() error { return os.Rename(filepath.Join(dir, "rw", "new"), filepath.Join(dir, "ro", "moved")) },
		func() error { return os.Rename(filepath.Join(dir, "rw", "new"), filepath.Join(dir, "rw", "renamed")) },
		func() error { return syscall.Mknod(filepath.Join(dir, "rw", "dev"), syscall.S_IFCHR|0o600, 0x0103) },
	}
	for _, p := range probes {
		err := p()
		var errno syscall.Errno
		switch {
		case err == nil:
			os.Stdout.WriteString("ok\n")
		case errors.As(err, &errno):
			os.Stdout.WriteString(errno.Error() + "\n")
		default:
			os.Stdout.WriteString(err.Error() + "\n")
		}
	}
	return 0
}

func TestRestrictTiers(t *testing.T) {
	testenv.StaticOnly(t, "its child sets no_new_privs on every thread (AllThreadsSyscall)")
	abi := ABI()
	if err := CheckABI(abi); err != nil {
		testenv.SkipOrFail(t, "%v", err)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ro"), 0o755)
	os.Mkdir(filepath.Join(dir, "rw"), 0o755)
	os.WriteFile(filepath.Join(dir, "ro", "file"), []byte("data"), 0o644)
	os.WriteFile(filepath.Join(dir, "outside"), []byte("secret"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STOCKADE_LANDLOCK_CHILD="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	denied := syscall.EACCES.Error()
	want := []string{
		"ok",                                 // write in write_exec
		"ok",                                 // read in read_only
		denied,                               // write in read_only
		denied,                               // truncate in read_only (ABI 3)
		denied,                               // read outside every tier
		syscall.EXDEV.Error() + "|" + denied, // rename into read_only: no MakeReg there
		"ok",                                 // rename within write_exec (Refer)
		syscall.EPERM.Error() + "|" + denied, // mknod of a device: never granted (EPERM from caps first when unprivileged)
	}
	got := splitLines(string(out))
	if len(got) != len(want) {
		t.Fatalf("child printed %q", out)
	}
	for i := range want {
		if !matches(got[i], want[i]) {
			t.Errorf("probe %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

func matches(got, want string) bool {
	for _, w := range splitAlt(want) {
		if got == w {
			return true
		}
	}
	return false
}

func splitAlt(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '|' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestStatusFor(t *testing.T) {
	tests := []struct {
		abi        int
		downgrades int
		ok         bool
	}{
		{0, 3, false}, {2, 3, false}, {3, 2, true}, {5, 1, true}, {6, 0, true}, {7, 0, true},
	}
	for _, tt := range tests {
		if got := len(StatusFor(tt.abi).Downgrades); got != tt.downgrades {
			t.Errorf("ABI %d: %d downgrades, want %d", tt.abi, got, tt.downgrades)
		}
		if ok := CheckABI(tt.abi) == nil; ok != tt.ok {
			t.Errorf("CheckABI(%d) ok=%v, want %v", tt.abi, ok, tt.ok)
		}
	}
}
