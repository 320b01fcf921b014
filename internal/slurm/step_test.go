package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStepRefused: inside a job (step mode) the chaperon answers only
// srun, with the step allowlist: what would shape a new allocation, name
// another job, or run code around the step is refused with its reason,
// and the administrator's additions do not reach it.
func TestStepRefused(t *testing.T) {
	c, events := newChaperon(t, Admin{AllowFlags: []string{"account", "reservation"}})
	c.cfg.Step = "42"
	w := c.cfg.Workdir
	cases := []struct {
		req    Request
		reason string
	}{
		{Request{Command: "srun", Args: []string{"--jobid=7", "true"}, Cwd: w}, "never of another"},
		{Request{Command: "srun", Args: []string{"--jobid", "42", "true"}, Cwd: w}, "never of another"},
		{Request{Command: "srun", Args: []string{"-p", "debug", "true"}, Cwd: w}, "sets a property of an allocation"},
		{Request{Command: "srun", Args: []string{"--qos=high", "true"}, Cwd: w}, "sets a property of an allocation"},
		{Request{Command: "srun", Args: []string{"--dependency=afterok:1", "true"}, Cwd: w}, "sets a property of an allocation"},
		{Request{Command: "srun", Args: []string{"--account=big", "true"}, Cwd: w}, "sets a property of an allocation"},
		{Request{Command: "srun", Args: []string{"--reservation=r", "true"}, Cwd: w}, "not on stockade's Slurm allowlist"},
		{Request{Command: "srun", Args: []string{"--uid=0", "true"}, Cwd: w}, "runs the job as another user"},
		{Request{Command: "srun", Args: []string{"--pty", "bash"}, Cwd: w}, "terminal outside the sandbox"},
		{Request{Command: "srun", Args: []string{"--x11", "xterm"}, Cwd: w}, "forwards the display"},
		{Request{Command: "srun", Args: []string{"--task-prolog=/x", "true"}, Cwd: w}, "outside the sandbox"},
		{Request{Command: "srun", Args: []string{"--multi-prog", "x.conf"}, Cwd: w}, "programs named in a file"},
		{Request{Command: "srun", Args: []string{"-Z", "true"}, Cwd: w}, "without an allocation"},
		{Request{Command: "srun", Args: []string{"true", ":", "/bin/sh", "-c", "id"}, Cwd: w}, "heterogeneous job"},
		{Request{Command: "srun", Args: []string{"-o", "/tmp/x", "true"}, Cwd: w}, "is outside the project"},
		{Request{Command: "srun", Args: []string{"--export=PATH=/x", "true"}, Cwd: w}, "not a variable the administrator allows"},
		{Request{Command: "srun", Args: []string{"true"}, Cwd: "/tmp"}, "outside the project"},
		{Request{Command: "sbatch", Args: []string{"--wrap=true"}, Cwd: w}, "only srun, for a step of this job (42)"},
		{Request{Command: "salloc", Cwd: w}, "only srun, for a step of this job"},
		{Request{Command: "squeue", Cwd: w}, "only srun, for a step of this job"},
		{Request{Command: "scancel", Args: []string{"42"}, Cwd: w}, "only srun, for a step of this job"},
	}
	for _, tc := range cases {
		*events = nil
		rep := c.Answer(tc.req)
		msg := string(rep.Stderr)
		if rep.Code != 1 || !strings.Contains(msg, "refused by stockade: ") || !strings.Contains(msg, tc.reason) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%s %q: exit %d %q; want exit 1 and one line naming %q", tc.req.Command, tc.req.Args, rep.Code, msg, tc.reason)
		}
		if len(*events) != 1 || !strings.HasPrefix((*events)[0], EventRefused) {
			t.Errorf("%s %q: events %q, want one %s", tc.req.Command, tc.req.Args, *events, EventRefused)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(c.cfg.State, "jobs")); len(entries) != 0 {
		t.Errorf("refused steps left %d job directories", len(entries))
	}
}

// TestStepArgs: a step goes to the real srun as a step of the chaperon's
// own job (--jobid first, from the configuration, never from the
// sandbox), its flags under their full names, its command behind the
// wrapper that runs it under stockade run.
func TestStepArgs(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	c.cfg.Step = "42"
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.cfg.Env = []string{"PATH=" + bin}
	rep := c.Answer(Request{Command: "srun", Args: []string{"-n", "2", "-l", "--overlap", "hostname", "-s"}, Cwd: c.cfg.Workdir})
	if rep.Code != 0 {
		t.Fatalf("srun: exit %d: %s", rep.Code, rep.Stderr)
	}
	args := strings.Split(strings.TrimSpace(string(rep.Stdout)), "\n")
	n := len(args)
	if n < 12 || args[n-1] != "-s" || args[0] != "--jobid=42" || args[1] != "--ntasks=2" || args[2] != "--label" || args[3] != "--overlap" ||
		!strings.HasPrefix(args[4], "--chdir="+filepath.Join(c.cfg.State, "jobs")) || args[5] != c.cfg.Stockade || args[6] != WrapEntry || args[n-2] != "hostname" {
		t.Fatalf("the real srun got %q", args)
	}
	// The step runs the wrapper entry with every value on its command
	// line: no script in a directory another session could write.
	if !slices.Contains(args, "--slurm-step") || args[7] != "" || args[8] != filepath.Join(strings.TrimPrefix(args[4], "--chdir="), jobIDFile) {
		t.Errorf("the step's wrapper does not run the command under stockade run in step mode: %q", args)
	}
	if entries, _ := os.ReadDir(strings.TrimPrefix(args[4], "--chdir=")); len(entries) > 0 {
		t.Errorf("the step left files in its job directory: %v", entries)
	}
}
