package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestSlurmStepCheck: --slurm-step (a job's wrapper, on the compute node)
// needs --slurm and the job id slurmd set; anything else is a usage error
// before anything is set up.
func TestSlurmStepCheck(t *testing.T) {
	cases := []struct {
		f     slurmFlags
		jobID string
		want  string // "" no error
	}{
		{slurmFlags{Slurm: true, SlurmStep: true}, "42", ""},
		{slurmFlags{SlurmStep: true}, "42", "--slurm-step needs --slurm"},
		{slurmFlags{Slurm: true, SlurmStep: true}, "", "is not a job id"},
		{slurmFlags{Slurm: true, SlurmStep: true}, "42 43", "is not a job id"},
		{slurmFlags{Slurm: true, SlurmStep: true}, "-1", "is not a job id"},
		{slurmFlags{Slurm: true}, "", ""},
	}
	for _, c := range cases {
		t.Setenv("SLURM_JOB_ID", c.jobID)
		err := c.f.check("proxy")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v SLURM_JOB_ID=%q: %v", c.f, c.jobID, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, new(usageError))):
			t.Errorf("%+v SLURM_JOB_ID=%q: %v, want a usage error naming %q", c.f, c.jobID, err, c.want)
		}
	}
}

// TestSlurmStateCheck: --slurm is refused, with one line naming the
// directory and the tree, when the chaperon's directory (where the jobs'
// wrappers are written) is one the sandbox can write, or holds one.
func TestSlurmStateCheck(t *testing.T) {
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "proj")
	sandboxHome := filepath.Join(home, ".local", "share", "stockade", "homes", "run-x")
	for _, d := range []string{filepath.Join(work, "state"), sandboxHome, filepath.Join(root, "proj2")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(work, "state"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".local", "state")
	cases := []struct {
		slurm    bool
		xdgState string // "" unset
		rw       []string
		want     string // the tree named; "" no error
	}{
		{true, "", nil, ""},
		{true, filepath.Join(root, "proj2"), nil, ""}, // a name that starts like the project's
		{false, filepath.Join(work, ".state"), nil, ""},
		{true, filepath.Join(work, ".state"), nil, "overlaps " + work + ","},
		{true, work, nil, "overlaps " + work + ","},
		{true, filepath.Join(root, "link"), nil, "overlaps " + work + ","},
		{true, "", []string{filepath.Join(home, ".local")}, "overlaps " + filepath.Join(home, ".local") + ","},
		{true, "", []string{filepath.Join(state, "stockade", "slurm", "jobs")}, "overlaps " + filepath.Join(state, "stockade", "slurm", "jobs") + ","},
		{true, filepath.Join(sandboxHome, ".state"), nil, "overlaps " + sandboxHome + ","},
	}
	// A link among the chaperon's directories, planted by an earlier
	// sandbox that could write the state directory, is refused, naming it.
	t.Setenv("XDG_STATE_HOME", "")
	os.MkdirAll(filepath.Join(state, "stockade"), 0o700)
	if err := os.Symlink(filepath.Join(root, "proj2"), filepath.Join(state, "stockade", "slurm")); err != nil {
		t.Fatal(err)
	}
	if err := (slurmFlags{Slurm: true}).checkState(policy.Policy{Workdir: work}, home, sandboxHome); err == nil ||
		!strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), filepath.Join(state, "stockade", "slurm")) || !errors.As(err, new(usageError)) {
		t.Errorf("a linked chaperon's directory: %v, want a usage error naming the link", err)
	}
	os.Remove(filepath.Join(state, "stockade", "slurm"))
	for _, c := range cases {
		t.Setenv("XDG_STATE_HOME", c.xdgState)
		p := policy.Policy{Workdir: work, RW: c.rw}
		err := slurmFlags{Slurm: c.slurm}.checkState(p, home, sandboxHome)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("--slurm %v XDG_STATE_HOME=%q --rw %q: %v", c.slurm, c.xdgState, c.rw, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "XDG_STATE_HOME") ||
			strings.Contains(err.Error(), "\n") || !errors.As(err, new(usageError))):
			t.Errorf("--slurm %v XDG_STATE_HOME=%q --rw %q: %v, want a one-line usage error naming %q", c.slurm, c.xdgState, c.rw, err, c.want)
		}
	}
}
