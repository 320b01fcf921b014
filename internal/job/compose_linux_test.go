//go:build linux

package job

import (
	"errors"
	"fmt"
	"github.com/stockade-dev/stockade/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandbox"
)

// TestMain lets the test binary play the stages sandbox.ProbeNamespaces
// re-executes; init itself is a fork, not a stage.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if entry, ok := sandbox.Entrypoints[os.Args[1]]; ok {
			os.Exit(entry())
		}
	}
	os.Exit(m.Run())
}

// requireSandbox skips when the kernel cannot run a sandbox at all, unless
// STOCKADE_MUST_WORK=1 turns that into a failure.
func requireSandbox(t *testing.T) {
	t.Helper()
	err := sandbox.ProbeNamespaces()
	if err == nil {
		err = landlock.CheckABI(landlock.ABI())
	}
	if err != nil {
		testenv.SkipOrFail(t, "sandbox unavailable: %v", err)
	}
}

// allStages are the names of Stages in the order they are declared.
var allStages = []string{"Planned", "InitStarted", "Wired", "CommandStarted", "CommandExited", "SandboxGone", "Checked"}

// stageLog records the stages a run calls; the one named fail returns an
// error. At InitStarted it notes init's pid and what the earlier stages
// made: whether the placeholder exists, whether init is in the cgroup.
type stageLog struct {
	mu          sync.Mutex
	got         []string
	fail        string
	placeholder string // a path the run protects with a placeholder
	cgroupName  string
	pid         int
	held        bool // the placeholder existed at InitStarted
	inCgroup    bool // init was in its cgroup at Wired, before the command
}

var errStage = errors.New("the test stops the run here")

func (l *stageLog) hit(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, name)
	if name == l.fail {
		return errStage
	}
	return nil
}

func (l *stageLog) stages() Stages {
	return Stages{
		Planned: func() error { return l.hit("Planned") },
		InitStarted: func(pid int) error {
			_, err := os.Lstat(l.placeholder)
			l.mu.Lock()
			l.pid, l.held = pid, err == nil
			l.mu.Unlock()
			return l.hit("InitStarted")
		},
		// Init places itself in the cgroup as its first act (or the
		// services place it at InitStarted): by the time it is wired,
		// it is there.
		Wired: func() error {
			l.mu.Lock()
			cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", l.pid))
			l.inCgroup = strings.Contains(string(cg), "/"+l.cgroupName)
			l.mu.Unlock()
			return l.hit("Wired")
		},
		CommandStarted: func() { l.hit("CommandStarted") },
		CommandExited:  func() { l.hit("CommandExited") },
		SandboxGone:    func() { l.hit("SandboxGone") },
		Checked:        func() { l.hit("Checked") },
	}
}

var testIDs atomic.Int64

// composeJob is a job over a fresh workdir whose protected ".git/hooks/"
// and masked ".env" do not exist, so that the run holds them with
// placeholders, in network mode "proxy", so that it is served.
func composeJob(t *testing.T, argv ...string) Job {
	dir := t.TempDir()
	wd, home, records := filepath.Join(dir, "wd"), filepath.Join(dir, "home"), filepath.Join(dir, "records")
	for _, d := range []string{wd, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Job{
		ID: fmt.Sprintf("c%d-%d", os.Getpid(), testIDs.Add(1)),
		Policy: policy.Policy{
			Workdir: wd, Protect: []string{".git/hooks/"}, Mask: []string{".env"},
			Network: "proxy", AgentPolicy: "deny", LogLevel: "error",
		},
		Home: "/home/stockade-compose-test", HomeSource: home, Records: records,
		Argv: argv, Env: []string{"PATH=/usr/bin:/bin"},
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestStages runs a command through Services once per row and checks which
// stages were called, in which order, and that whatever the stages before
// a failure made is gone when Run returns: the placeholders and their
// records, init, every descriptor the run opened (listeners, the sync
// socket); and, once the services are closed, the cgroup.
func TestStages(t *testing.T) {
	requireSandbox(t)
	tests := []struct {
		name     string
		argv     []string
		fail     string   // the stage whose hook fails, "" none
		want     []string // the stages called, in order
		wantCode int
		wantErr  error // nil: no error; errStage; or any *sandbox.StepError
	}{
		{"a run that succeeds", []string{"/bin/true"}, "", allStages, 0, nil},
		{"the command fails", []string{"sh", "-c", "exit 3"}, "", allStages, 3, nil},
		{"fails at Planned", []string{"/bin/true"}, "Planned", allStages[:1], sandbox.ExitSetup, errStage},
		{"fails at InitStarted", []string{"/bin/true"}, "InitStarted", allStages[:2], sandbox.ExitSetup, errStage},
		{"fails at Wired", []string{"/bin/true"}, "Wired", allStages[:3], sandbox.ExitSetup, errStage},
		{"the command is not found", []string{"no-such-command-xyz"}, "", []string{"Planned", "InitStarted", "Wired", "SandboxGone", "Checked"}, sandbox.ExitNotFound, &sandbox.StepError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := composeJob(t, tt.argv...)
			svc, err := Compose(j, Wiring{Limits: cgroup.Limits{Pids: 64}})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			g, _, err := svc.cgroup.Wait()
			if err != nil {
				t.Fatal(err)
			}
			cgPaths := g.Paths()
			log := &stageLog{fail: tt.fail, placeholder: filepath.Join(j.Policy.Workdir, ".env"), cgroupName: "stockade-" + j.ID}
			fds := openFDs(t)
			code, err := svc.Run(Hooks{Stages: log.stages()})

			if !slices.Equal(log.got, tt.want) {
				t.Errorf("stages %v, want %v", log.got, tt.want)
			}
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d (err %v)", code, tt.wantCode, err)
			}
			var se *sandbox.StepError
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr == errStage && !errors.Is(err, errStage):
				t.Errorf("error %v, want the stage's own", err)
			case tt.wantErr != nil && tt.wantErr != errStage && !errors.As(err, &se):
				t.Errorf("error %v, want a StepError", err)
			}
			if slices.Contains(log.got, "InitStarted") {
				if !log.held {
					t.Errorf("the placeholder %s did not exist when init started", log.placeholder)
				}
			}
			if slices.Contains(log.got, "Wired") && len(cgPaths) > 0 && !log.inCgroup {
				t.Errorf("init was not in %s when the run was wired, before the command", log.cgroupName)
			}

			// What the stages made is gone.
			if ents, _ := os.ReadDir(j.Policy.Workdir); len(ents) > 0 {
				t.Errorf("the workdir holds %v after the run; want the placeholders gone", names(ents))
			}
			if recs, _ := filepath.Glob(filepath.Join(j.Records, "*.json")); len(recs) > 0 {
				t.Errorf("placeholder records %v are left after the run", recs)
			}
			if tt.wantCode != 0 && tt.wantCode != 3 {
				// Init of a failed start is reaped before Run returns (one
				// that ran to the end is reaped while the checks run).
				if log.pid != 0 && unix.Kill(log.pid, 0) != unix.ESRCH {
					t.Errorf("init (pid %d) is still there", log.pid)
				}
				if n := openFDs(t); n > fds {
					t.Errorf("%d descriptors open after the run, %d before", n, fds)
				}
			}
			svc.Close()
			for _, p := range cgPaths {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the cgroup %s is still there after Close (%v)", p, err)
				}
			}
		})
	}
}

// TestComposeFailureLeavesNothing: services that cannot all be made leave
// none behind, the cgroup the caller began included.
func TestComposeFailureLeavesNothing(t *testing.T) {
	j := composeJob(t, "/bin/true")
	j.Policy.AgentPolicy = "maybe"
	pending := BeginCgroup(j.ID, cgroup.Limits{Pids: 64}, nil)
	g, _, err := pending.Wait()
	if err != nil {
		t.Fatal(err)
	}
	paths := g.Paths()
	if _, err := Compose(j, Wiring{Cgroup: pending}); err == nil {
		t.Fatal("Compose accepted agent policy \"maybe\"")
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the cgroup %s is still there after Compose failed (%v)", p, err)
		}
	}
	if len(paths) == 0 {
		t.Log("no cgroup could be made here: only the error is checked")
	}
}

func names(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestCgroupCheckedAtPlanned: a cgroup that could not be made stops the run
// at Planned, before the caller's hook and with nothing started.
func TestCgroupCheckedAtPlanned(t *testing.T) {
	requireSandbox(t)
	j := composeJob(t, "/bin/true")
	svc, err := Compose(j, Wiring{Cgroup: cgroup.Begin("not/one/element", cgroup.Limits{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	log := &stageLog{placeholder: filepath.Join(j.Policy.Workdir, ".env")}
	code, err := svc.Run(Hooks{Stages: log.stages()})
	if code != sandbox.ExitSetup || err == nil || !strings.Contains(err.Error(), "setting up resource limits") {
		t.Errorf("status %d, error %v; want %d and the cgroup's error", code, err, sandbox.ExitSetup)
	}
	if len(log.got) > 0 {
		t.Errorf("stages %v were called; want none", log.got)
	}
	if ents, _ := os.ReadDir(j.Policy.Workdir); len(ents) > 0 {
		t.Errorf("the workdir holds %v after the run; want the placeholders gone", names(ents))
	}
}
