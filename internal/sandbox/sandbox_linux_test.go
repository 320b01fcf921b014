//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestMain lets the test binary play the stages ProbeNamespaces re-executes
// (os.Executable() is this test binary); init itself is a fork, not a stage.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if entry, ok := Entrypoints[os.Args[1]]; ok {
			os.Exit(entry())
		}
	}
	os.Exit(m.Run())
}

// requireSandbox skips when the kernel cannot run a sandbox at all, unless
// STOCKADE_MUST_WORK=1 turns that into a failure.
func requireSandbox(t *testing.T) {
	t.Helper()
	err := ProbeNamespaces()
	if err == nil {
		err = landlock.CheckABI(landlock.ABI())
	}
	if err != nil {
		testenv.SkipOrFail(t, "sandbox unavailable: %v", err)
	}
}

type result struct {
	code           int
	err            error
	stdout, stderr string
}

// run runs argv in a sandbox over a fresh workdir and returns what it printed.
func run(t *testing.T, wd string, argv ...string) result {
	t.Helper()
	if wd == "" {
		wd = t.TempDir()
	}
	spec, err := NewSpec(Config{
		ID: "test01", Workdir: wd, Home: "/nonexistent-home",
		Protect: []string{".git/hooks/", ".git/config"}, Mask: []string{".env"},
		Argv: argv, Env: []string{"PATH=/usr/bin:/bin", "SANDBOXED=1"},
	}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	var stdout, stderr bytes.Buffer
	done := make(chan struct{}, 2)
	go func() { stdout.ReadFrom(outR); done <- struct{}{} }()
	go func() { stderr.ReadFrom(errR); done <- struct{}{} }()
	code, err := Run(spec, Options{Stdin: devnull, Stdout: outW, Stderr: errW})
	outW.Close()
	errW.Close()
	<-done
	<-done
	return result{code, err, stdout.String(), stderr.String()}
}

func TestRunExitStatus(t *testing.T) {
	requireSandbox(t)
	tests := []struct {
		name     string
		argv     []string
		wantCode int
		wantOut  string
		wantStep string // non-empty: Run must fail with a StepError of this step
	}{
		{"true", []string{"/bin/true"}, 0, "", ""},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 3, "", ""},
		{"killed by SIGKILL", []string{"sh", "-c", "kill -9 $$"}, 128 + 9, "", ""},
		{"killed by SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15, "", ""},
		{"stdout passes through", []string{"echo", "hello"}, 0, "hello\n", ""},
		{"env is the spec's", []string{"sh", "-c", "echo $SANDBOXED-$HOME"}, 0, "1-\n", ""},
		{"not found", []string{"no-such-command-xyz"}, ExitNotFound, "", "exec"},
		{"not executable", []string{"/etc/passwd"}, ExitNotExec, "", "exec"},
		{"parent is init, PID 1", []string{"sh", "-c", "echo $PPID"}, 0, "1\n", ""},
		{"hostname", []string{"cat", "/proc/sys/kernel/hostname"}, 0, "stockade-test01\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.argv...)
			if r.code != tt.wantCode {
				t.Errorf("exit status %d, want %d (err %v, stderr %q)", r.code, tt.wantCode, r.err, r.stderr)
			}
			if tt.wantOut != "" && r.stdout != tt.wantOut {
				t.Errorf("stdout %q, want %q", r.stdout, tt.wantOut)
			}
			var se *StepError
			switch {
			case tt.wantStep == "" && r.err != nil:
				t.Errorf("unexpected error %v", r.err)
			case tt.wantStep != "" && !errors.As(r.err, &se):
				t.Errorf("error %v, want a StepError of step %q", r.err, tt.wantStep)
			case tt.wantStep != "" && se.Step != tt.wantStep:
				t.Errorf("step %q, want %q (%v)", se.Step, tt.wantStep, se)
			}
		})
	}
}

// TestNothingSurvives: a background process started by the command dies with
// the sandbox, because init is PID 1 of its PID namespace.
func TestNothingSurvives(t *testing.T) {
	requireSandbox(t)
	marker := "stockade-survivor-" + filepath.Base(t.TempDir())
	// The command waits until the marker runs (so the test can fail), then exits.
	r := run(t, "", "bash", "-c", `found() { for f in /proc/[0-9]*/cmdline; do IFS= read -r -d '' a0 < "$f" 2>/dev/null && [ "$a0" = `+marker+` ] && return 0; done; return 1; }
		(exec -a `+marker+` sleep 1000) & until found; do :; done; echo up`)
	if r.stdout != "up\n" {
		t.Fatalf("the marker process never ran: %q %q", r.stdout, r.stderr)
	}
	if r.code != 0 || r.err != nil {
		t.Fatalf("status %d err %v stderr %q", r.code, r.err, r.stderr)
	}
	// The kernel tears the namespace down asynchronously; give it a moment.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if !processWithArg0(marker) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a process of the sandbox (%s) outlived it", marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processWithArg0(arg0 string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.HasPrefix(b, []byte(arg0+"\x00")) {
			return true
		}
	}
	return false
}

// TestSetupFailureIsStructured: a bind whose source vanished between planning
// and mounting fails the mount step with the path, and leaves nothing behind.
func TestSetupFailureIsStructured(t *testing.T) {
	requireSandbox(t)
	wd := t.TempDir()
	gone := filepath.Join(t.TempDir(), "gone")
	os.Mkdir(gone, 0o755)
	spec, err := NewSpec(Config{ID: "fail01", Workdir: wd, Home: "/nonexistent-home", RO: []string{gone}, Argv: []string{"/bin/true"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	code, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull})
	var se *StepError
	if code != ExitSetup || !errors.As(err, &se) || se.Step != "mount" || !strings.Contains(se.Msg, gone) || se.Errno != "ENOENT" {
		t.Fatalf("got status %d, error %#v; want %d and a mount StepError naming %s with ENOENT", code, err, ExitSetup, gone)
	}
}

// TestStrictMountRace: what the plan protects is swapped for something else
// after the plan was made and before init mounts (another session's agent
// could do that): a symlink in a parent, or a symlink in place of the path.
// Init refuses each (ELOOP through a link, ESTALE for a link where the plan
// saw a directory), mounts nothing through the link, and the link's target
// on the host is untouched.
func TestStrictMountRace(t *testing.T) {
	requireSandbox(t)
	for _, tt := range []struct {
		name  string
		swap  func(wd, outside string) error
		errno []string
	}{
		{"parent becomes a symlink", func(wd, outside string) error {
			if err := os.Rename(filepath.Join(wd, ".git"), filepath.Join(wd, "git.old")); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(wd, ".git"))
		}, []string{"ELOOP", "ESTALE"}},
		{"path becomes a symlink", func(wd, outside string) error {
			if err := os.Rename(filepath.Join(wd, ".git", "hooks"), filepath.Join(wd, "hooks.old")); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(outside, "hooks"), filepath.Join(wd, ".git", "hooks"))
		}, []string{"ESTALE"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wd, outside := t.TempDir(), t.TempDir()
			for _, d := range []string{wd + "/.git/hooks", outside + "/hooks"} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(wd+"/.git/config", []byte("[core]\n"), 0o644)
			os.WriteFile(outside+"/config", []byte("[host]\n"), 0o644)
			spec, err := NewSpec(Config{ID: "race01", Workdir: wd, Home: "/nonexistent-home",
				Protect: []string{".git/hooks/", ".git/config"},
				Argv:    []string{"/bin/sh", "-c", "echo planted > .git/config"}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
			if err != nil {
				t.Fatal(err)
			}
			// Init makes the mounts below the workdir only once
			// BeforeMounts returned, as it does those over placeholders:
			// the swap comes between the plan and the mounts.
			for i, m := range spec.Plan.Mounts {
				if strings.HasPrefix(m.Target, wd+"/") {
					spec.Plan.Mounts[i].Held = true
				}
			}
			devnull, _ := os.Open(os.DevNull)
			defer devnull.Close()
			code, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull,
				BeforeMounts: func() error { return tt.swap(wd, outside) }})
			var se *StepError
			if code != ExitSetup || !errors.As(err, &se) || se.Step != "mount" || !slices.Contains(tt.errno, se.Errno) {
				t.Fatalf("got status %d, error %#v; want a mount StepError with %v", code, err, tt.errno)
			}
			if b, _ := os.ReadFile(outside + "/config"); string(b) != "[host]\n" {
				t.Errorf("the link's target was written: %q", b)
			}
		})
	}
}
