//go:build linux

package sandbox

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestInitDeath: an init that dies before it starts the command, without a
// report (a crash: the way a cgo build's init died of SIGSEGV), ends the
// run at once with a StepError naming the step it had reached, never with
// a status of the command's. With Listen the supervisor is reading init's
// descriptors when init dies: it must see the socket close, not wait on.
func TestInitDeath(t *testing.T) {
	requireSandbox(t)
	for _, tc := range []struct {
		name     string
		at       uint8
		bySignal bool
		listen   bool
		want     string // in the message
	}{
		{"segv at start", stepInit, true, false, "SIGSEGV"},
		{"segv in network, supervisor awaiting listeners", stepNetwork, true, true, "SIGSEGV"},
		{"exit in mount", stepMount, false, false, "exited with status 125"},
		{"segv before cgroup placement", stepPlaced, true, true, "SIGSEGV"},
		{"exit at landlock", stepLandlock, false, false, "exited with status 125"},
		{"segv at exec", stepExec, true, false, "SIGSEGV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testDeath.at, testDeath.bySignal = tc.at+1, tc.bySignal
			defer func() { testDeath.at, testDeath.bySignal = 0, false }()
			spec, err := NewSpec(Config{ID: "death1", Workdir: t.TempDir(), Home: "/nonexistent-home",
				Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
			if err != nil {
				t.Fatal(err)
			}
			spec.Listen = tc.listen
			devnull, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			defer devnull.Close()
			type ran struct {
				code int
				err  error
			}
			done := make(chan ran, 1)
			go func() {
				code, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull})
				done <- ran{code, err}
			}()
			var r ran
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the supervisor still waits 30s after init died")
			}
			var se *StepError
			if !errors.As(r.err, &se) {
				t.Fatalf("Run = %d, %v; want a *StepError", r.code, r.err)
			}
			if se.Step != stepNames[tc.at] || r.code != ExitSetup || se.Code != ExitSetup {
				t.Errorf("Run = %d, step %q (code %d); want %d, step %q", r.code, se.Step, se.Code, ExitSetup, stepNames[tc.at])
			}
			if !strings.Contains(se.Msg, tc.want) || !strings.Contains(se.Msg, "before it started the command") {
				t.Errorf("message %q does not say %q and that the command never started", se.Msg, tc.want)
			}
		})
	}
}

// TestAbortBeforeListeners: when the supervisor's own part of the start
// fails while init waits to send its listeners (a placeholder it cannot
// make), the run ends at once with that error: init's unread message is
// not a report, and the supervisor holds no end of init's socket that
// would keep it waiting.
func TestAbortBeforeListeners(t *testing.T) {
	requireSandbox(t)
	spec, err := NewSpec(Config{ID: "abort1", Workdir: t.TempDir(), Home: "/nonexistent-home",
		Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Listen = true
	devnull, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	defer devnull.Close()
	mine := errors.New("creating placeholder: permission denied")
	done := make(chan error, 1)
	go func() {
		_, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull,
			BeforeMounts: func() error { return mine }})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, mine) {
			t.Errorf("Run = %v, want the supervisor's own error %q", err, mine)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor still waits 30s after its own part failed")
	}
}
