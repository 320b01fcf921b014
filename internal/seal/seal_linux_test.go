package seal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// A confined process stays confined, so every case runs seal in a
// re-executed copy of the test binary (the "child"), which executes the
// command given; the command is often the test binary again (the "probe"),
// which reports what it could do, one line per operation.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("SEAL_TEST_CHILD") != "":
		os.Exit(child())
	case os.Getenv("SEAL_TEST_PROBE") != "":
		os.Exit(probe(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// child prepares what SEAL_TEST_PRE asks for, then runs seal with the
// policy file SEAL_TEST_POLICY (descriptor 3 when empty) on its arguments.
func child() int {
	switch pre := os.Getenv("SEAL_TEST_PRE"); pre {
	case "":
	case "filters":
		// Fill the kernel's budget of filter instructions per process
		// (32768, each filter counting 4 more than its length) with
		// filters that allow everything, halving their size as they stop
		// fitting, so that no filter of seal's can fit.
		syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
		for n := 4096; n > 0; {
			prog := make([]seccomp.Instruction, n)
			for i := range prog[:n-1] {
				prog[i] = seccomp.Instruction{Code: 0x20} // ld [nr]
			}
			prog[n-1] = seccomp.Instruction{Code: 0x06, K: 0x7fff0000} // ret allow
			if err := seccomp.Install(prog); err != nil {
				n /= 2
			}
		}
	case "securebits":
		// Lock SECBIT_NOROOT off: seal's attempt to set it must fail.
		if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_SECUREBITS, 1<<1, 0); e != 0 {
			fmt.Fprintln(os.Stderr, "pre:", e)
			return 99
		}
	case "setuid":
		// What a set-user-ID binary owned by nobody starts with.
		if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_SETRESUID, 0, 65534, 0); e != 0 {
			fmt.Fprintln(os.Stderr, "pre:", e)
			return 99
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown SEAL_TEST_PRE", pre)
		return 99
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEAL_TEST_CHILD=") {
			env = append(env, kv)
		}
	}
	o := Options{PolicyFile: os.Getenv("SEAL_TEST_POLICY"), Args: os.Args[1:], Env: env}
	if inline := os.Getenv("SEAL_TEST_INLINE"); inline != "" {
		o.Policy, o.KeepCaps = []byte(inline), true
	}
	err := Run(o)
	var se *Error
	if errors.As(err, &se) {
		fmt.Fprintln(os.Stderr, "seal:", se.Err)
		return se.Code
	}
	fmt.Fprintln(os.Stderr, "seal returned", err)
	return 98
}

// probe runs each operation and prints "ok" or the errno:
// read:PATH, write:PATH, fd:N (is descriptor N open), getppid, status
// (capabilities and no_new_privs).
func probe(ops []string) int {
	for _, op := range ops {
		kind, arg, _ := strings.Cut(op, ":")
		var err error
		switch kind {
		case "read":
			_, err = os.ReadFile(arg)
		case "write":
			err = os.WriteFile(arg, []byte("x"), 0o644)
		case "fd":
			var fd int
			fmt.Sscan(arg, &fd)
			_, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		case "getppid":
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		case "status":
			var b []byte
			if b, err = os.ReadFile("/proc/self/status"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") {
						fmt.Println(strings.Join(strings.Fields(l), " "))
					}
				}
			}
		}
		var errno syscall.Errno
		switch {
		case err == nil:
			fmt.Println("ok")
		case errors.As(err, &errno):
			fmt.Println(unix.ErrnoName(errno))
		default:
			fmt.Println(err)
		}
	}
	return 0
}

type sealRun struct {
	policy string // JSON; @WORK@ and @BIN@ are replaced
	mode   os.FileMode
	pre    string
	inline bool // pass the policy in Options.Policy, with KeepCaps
	extra  bool // pass descriptors 3 to 9 open
	setup  func(work string)
	args   []string
}

type sealResult struct {
	stdout, stderr string
	code           int
	signal         syscall.Signal
}

// runSeal runs seal in a child over a fresh work directory, with the
// policy in a file (or on descriptor 3 when mode is 0).
func runSeal(t *testing.T, r sealRun) sealResult {
	t.Helper()
	if err := landlock.CheckABI(landlock.ABI()); err != nil {
		if os.Getenv("STOCKADE_MUST_WORK") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	work := t.TempDir()
	os.Chmod(work, 0o755)
	os.WriteFile(filepath.Join(work, "file"), []byte("data"), 0o644)
	os.Mkdir(filepath.Join(work, "secret"), 0o755)
	os.WriteFile(filepath.Join(work, "secret", "key"), []byte("key"), 0o644)
	if r.setup != nil {
		r.setup(work)
	}
	bin, _ := filepath.Abs(os.Args[0])
	policy := strings.NewReplacer("@WORK@", work, "@BIN@", filepath.Dir(bin)).Replace(r.policy)
	var args []string
	for _, a := range r.args {
		args = append(args, strings.ReplaceAll(a, "@WORK@", work))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SEAL_TEST_CHILD=1", "SEAL_TEST_PROBE=1", "SEAL_TEST_PRE="+r.pre)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	switch {
	case r.inline:
		cmd.Env = append(cmd.Env, "SEAL_TEST_INLINE="+policy)
	case r.mode == 0:
		rd, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() { w.WriteString(policy); w.Close() }()
		defer rd.Close()
		cmd.ExtraFiles = []*os.File{rd}
	default:
		file := filepath.Join(t.TempDir(), "policy.json")
		if err := os.WriteFile(file, []byte(policy), r.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(file, r.mode)
		cmd.Env = append(cmd.Env, "SEAL_TEST_POLICY="+file)
	}
	if r.extra {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		for len(cmd.ExtraFiles) < 7 {
			cmd.ExtraFiles = append(cmd.ExtraFiles, null)
		}
	}
	err := cmd.Run()
	res := sealResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		res.code = ws.ExitStatus()
		if ws.Signaled() {
			res.signal = ws.Signal()
		}
	case err != nil:
		t.Fatal(err)
	}
	return res
}

// basePolicy lets the probe (the test binary) run, read /proc and write the
// work directory, with the syscalls section given.
func basePolicy(syscalls string) string {
	p := `{"filesystem": {"allow": [
		{"path": "@WORK@", "access": "readwrite"},
		{"path": "@BIN@", "access": "execute"},
		{"path": "/proc", "access": "read"}], "deny": ["@WORK@/secret"]}`
	if syscalls != "" {
		p += `, "syscalls": ` + syscalls
	}
	return p + "}"
}

// allBut is an allowlist of every system call of this machine but omit.
func allBut(t *testing.T, omit string) string {
	arch, err := seccomp.NativeArch()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range seccomp.Syscalls(arch) {
		if n != omit {
			names = append(names, `"`+n+`"`)
		}
	}
	return `{"allow": [` + strings.Join(names, ",") + `], "defaultDeny": true}`
}
