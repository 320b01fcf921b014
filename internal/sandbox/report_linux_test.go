//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// report is what program.fail writes for step, idx, errno and code.
func report(step uint8, idx int, errno syscall.Errno, code int) []byte {
	var p program
	b := p.report[:]
	b[0], b[1], b[2], b[3], b[4], b[5], b[6] = 'E', step, byte(idx), byte(idx>>8), byte(errno), byte(errno>>8), byte(code)
	return b
}

// TestDecode: init's failure reports become the StepError the user sees.
func TestDecode(t *testing.T) {
	plan := mount.Plan{Mounts: []mount.Mount{{Kind: mount.Bind, Source: "/w", Target: "/w", IsDir: true, Strict: true, Why: "the workdir"},
		{Kind: mount.Feed, Target: "/run/stockade/denials", ReadOnly: true, Why: "denials"}}}
	steps := mount.Steps(plan, "/tmp")
	mountStep := -1
	for i, s := range steps {
		if s.Mount == 0 {
			mountStep = i
			break
		}
	}
	if mountStep < 0 {
		t.Fatal("no step of the workdir's mount")
	}
	s := &Sandbox{prog: &program{}, steps: steps, spec: Spec{Plan: plan, Exec: ExecSpec{
		Argv: []string{"claude"}, Env: []string{"PATH=/usr/bin:/bin"}, Cwd: "/w/sub"}}}
	for _, tc := range []struct {
		name  string
		in    []byte
		step  string
		code  int
		errno string
		path  string
		msg   string // in Msg
	}{
		{"chdir", report(stepChdir, 0, unix.ENOENT, ExitSetup), "chdir", ExitSetup, "ENOENT", "/w/sub", "chdir /w/sub"},
		{"mount of the workdir", report(stepMount, mountStep, unix.ELOOP, ExitSetup), "mount", ExitSetup, "ELOOP", "/w", "a symlink was put on the path"},
		{"mount, index out of range", report(stepMount, 0xffff, unix.EPERM, ExitSetup), "mount", ExitSetup, "EPERM", "", "mount"},
		{"feed", report(stepMount, len(steps), unix.EPIPE, ExitSetup), "mount", ExitSetup, "EPIPE", "/run/stockade/denials", "sending the descriptor of /run/stockade/denials"},
		{"listener", report(stepNetwork, 1, unix.EADDRINUSE, ExitSetup), "network", ExitSetup, "EADDRINUSE", "", Listeners[1].Addr},
		{"loopback", report(stepNetwork, idxLoopback, unix.EPERM, ExitSetup), "network", ExitSetup, "EPERM", "", "bringing lo up"},
		{"send listeners", report(stepNetwork, idxSendListeners, unix.EPIPE, ExitSetup), "network", ExitSetup, "EPIPE", "", "sending the listeners"},
		{"terminal", report(stepTerminal, 2, unix.EIO, ExitSetup), "terminal", ExitSetup, "EIO", "", "TIOCGPTPEER"},
		{"not found", report(stepExec, 1, unix.ENOENT, ExitNotFound), "exec", ExitNotFound, "ENOENT", "claude", "not found in the sandbox's PATH (/usr/bin:/bin)"},
		{"not executable", report(stepExec, 0, unix.EACCES, ExitNotExec), "exec", ExitNotExec, "EACCES", "/usr/bin/claude", "executing /usr/bin/claude"},
		{"unknown step", report(200, 0, unix.EPERM, ExitSetup), "init", ExitSetup, "EPERM", "", "setting up the sandbox"},
		{"short", []byte("E\x05"), "init", ExitSetup, "", "", "unexpected message"},
		{"not a report", append([]byte{'X'}, make([]byte, len(s.prog.report)-1)...), "init", ExitSetup, "", "", "unexpected message"},
	} {
		e := s.decode(tc.in)
		if e.Step != tc.step || e.Code != tc.code || e.Errno != tc.errno || e.Path != tc.path || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: decode = %+v\nwant step %q code %d errno %q path %q, msg with %q", tc.name, e, tc.step, tc.code, tc.errno, tc.path, tc.msg)
		}
	}
}

// TestDied: init's death without a report names the step and how it died,
// and is never a status of the command's.
func TestDied(t *testing.T) {
	segv := syscall.WaitStatus(uint32(unix.SIGSEGV))
	exited := syscall.WaitStatus(3 << 8)
	for _, tc := range []struct {
		reached uint8
		ws      syscall.WaitStatus
		step    string
		msg     string
	}{
		{stepInit, segv, "init", "killed by signal SIGSEGV"},
		{stepMount, segv, "mount", "killed by signal SIGSEGV"},
		{stepLandlock, exited, "landlock", "exited with status 3"},
		{250, exited, "init", "exited with status 3"},
	} {
		e := died(tc.reached, tc.ws)
		if e.Step != tc.step || e.Code != ExitSetup || !strings.Contains(e.Msg, tc.msg) || !strings.Contains(e.Msg, "before it started the command") {
			t.Errorf("died(%d, %#x) = %+v; want step %q, code %d, msg with %q", tc.reached, uint32(tc.ws), e, tc.step, ExitSetup, tc.msg)
		}
	}
}

// TestArgvLen: the bounds of the command line and environment come from
// /proc/self/stat, and only when they start where os.Args[0] does.
func TestArgvLen(t *testing.T) {
	// comm holds a ')' and spaces: the fields start after the last ')'.
	fields := make([]string, 52)
	for i := range fields {
		fields[i] = "0"
	}
	fields[47], fields[50] = "140720000000000", "140720000004096" // arg_start, env_end (1-based 48th and 51st)
	stat := []byte("1234 (a) b c) " + strings.Join(fields[2:], " ") + "\n")
	if got := argvLen(stat, 140720000000000); got != 4096 {
		t.Errorf("argvLen = %d, want 4096", got)
	}
	for name, in := range map[string][]byte{
		"elsewhere":  stat,
		"no paren":   []byte("1234 a b"),
		"too short":  []byte("1 (a) S 0 0"),
		"not number": []byte(strings.Replace(string(stat), "140720000004096", "x", 1)),
	} {
		argv0 := uintptr(140720000000000)
		if name == "elsewhere" {
			argv0 = 1
		}
		if got := argvLen(in, argv0); got != 0 {
			t.Errorf("%s: argvLen = %d, want 0", name, got)
		}
	}
	// This process: the area holds os.Args[0] at its start.
	start, n := argvArea()
	if start == nil || n == 0 {
		t.Skip("argvArea found nothing (os.Args moved?)")
	}
	if got := unsafe.String((*byte)(start), len(os.Args[0])); got != os.Args[0] {
		t.Errorf("argvArea starts with %q, want %q", got, os.Args[0])
	}
}

// TestReadSyncUntakenDescriptors: init's messages that carry descriptors
// (listeners, the feed file, the pty master) and that setup stopped before taking are
// not failure reports: the error of a stopped start stays the supervisor's
// own. A real report after them still counts.
func TestReadSyncUntakenDescriptors(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs [][]byte
		want string // the StepError's step, or "" for none
	}{
		{"listeners", [][]byte{{msgListeners}}, ""},
		{"pty", [][]byte{{msgPTY}}, ""},
		{"feed", [][]byte{{msgFeed}}, ""},
		{"listeners, then a report", [][]byte{{msgListeners}, report(stepChdir, 0, unix.ENOENT, ExitSetup)}, "chdir"},
		{"garbage", [][]byte{[]byte("zz")}, "init"},
	} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := &Sandbox{sync: os.NewFile(uintptr(fds[0]), "sync"), msg: make(chan *StepError, 1), prog: &program{},
			spec: Spec{Exec: ExecSpec{Cwd: "/w"}}}
		for _, m := range tc.msgs {
			if _, err := unix.Write(fds[1], m); err != nil {
				t.Fatal(err)
			}
		}
		unix.Close(fds[1])
		s.readSync()
		e := <-s.msg
		s.sync.Close()
		switch {
		case tc.want == "" && e != nil:
			t.Errorf("%s: readSync reported %v, want nothing", tc.name, e)
		case tc.want != "" && (e == nil || e.Step != tc.want):
			t.Errorf("%s: readSync reported %v, want a %s step error", tc.name, e, tc.want)
		}
	}
}

// TestMountReportKept: a mount init cannot make (a masked name under a
// directory of another user, which the sandbox's user namespace does not
// map) is reported as init's step error, naming the mount and why, even
// though init exits before the supervisor's kill: not as a death "with no
// report".
func TestMountReportKept(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("only root can make a directory of another user; the root pass runs this")
	}
	wd := t.TempDir()
	priv := filepath.Join(wd, "priv", "sub")
	if err := os.MkdirAll(priv, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(priv, ".env"), []byte("SECRET=1\n"), 0o600)
	os.Chown(filepath.Join(wd, "priv"), 12345, 12345)
	os.Chmod(filepath.Join(wd, "priv"), 0o700)
	for i := 0; i < 5; i++ {
		spec, err := NewSpec(Config{ID: "report1", Workdir: wd, Home: "/nonexistent-home", Mask: []string{".env"},
			Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
		if err != nil {
			t.Fatal(err)
		}
		devnull, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		code, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull})
		devnull.Close()
		var se *StepError
		if code != ExitSetup || !errors.As(err, &se) || se.Step != "mount" || se.Errno != "EACCES" ||
			!strings.Contains(se.Msg, "cannot reach a directory on the way") {
			t.Fatalf("Run = %d, %v; want %d and a mount step error with EACCES", code, err, ExitSetup)
		}
	}
}
