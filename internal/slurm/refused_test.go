package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// flagTables are every flag table of the chaperon, with the command that
// reads it and whether it is read in step mode (inside a job).
func flagTables() []struct {
	command string
	flags   []Flag
	step    bool
} {
	return []struct {
		command string
		flags   []Flag
		step    bool
	}{
		{"sbatch", sbatchFlags(), false},
		{"srun", srunFlags(), false},
		{"srun", stepFlags(), true},
		{"squeue", squeueFlags, false},
		{"sacct", sacctFlags, false},
		{"scancel", scancelFlags, false},
		{"scontrol", scontrolFlags, false},
		{"sinfo", sinfoFlags, false},
	}
}

// mustRefuse are flags each table must refuse with a reason: if one loses
// its reason, the loop of TestEveryRefusedFlag would no longer see it.
var mustRefuse = map[string][]string{
	"sbatch": {"uid", "gid", "get-user-env", "export-file", "prolog", "epilog", "task-prolog", "task-epilog",
		"pty", "x11", "container", "container-id", "mail-type", "mail-user", "clusters", "cluster-constraint",
		"bb", "bbf", "bcast", "reboot", "propagate", "account"},
	"srun": {"uid", "gid", "get-user-env", "export-file", "prolog", "epilog", "task-prolog", "task-epilog",
		"pty", "x11", "container", "container-id", "mail-type", "mail-user", "clusters", "cluster-constraint",
		"bb", "bbf", "bcast", "reboot", "propagate", "account", "jobid", "multi-prog", "no-allocate"},
	"squeue":   {"iterate", "user", "account", "clusters"},
	"sacct":    {"user", "allusers", "accounts", "clusters"},
	"scancel":  {"user", "me", "name", "partition", "state", "account", "nodelist", "interactive", "clusters"},
	"scontrol": {"clusters"},
	"sinfo":    {"iterate", "clusters", "federation"},
}

// forms are the ways a flag can be written on a command line: its long
// name (with a value unless it takes none) and its short letter.
func forms(f Flag) []string {
	long := "--" + f.Long + "=x"
	if f.Kind == boolean || f.Kind == optional {
		long = "--" + f.Long
	}
	out := []string{long}
	if f.Short != 0 {
		short := "-" + string(f.Short) + "x"
		if f.Kind == boolean || f.Kind == optional {
			short = "-" + string(f.Short)
		}
		out = append(out, short)
	}
	return out
}

// TestEveryRefusedFlag: every flag that a table refuses with a reason is
// refused, in each of its forms (and, for sbatch, as an #SBATCH line),
// with that reason, exit 1, one line and one audit event, before any
// Slurm command runs (the chaperon's PATH has none).
func TestEveryRefusedFlag(t *testing.T) {
	seen := map[string][]string{}
	for _, tb := range flagTables() {
		c, events := newChaperon(t, Admin{})
		if tb.step {
			c.cfg.Step = "42"
		}
		w := c.cfg.Workdir
		for _, f := range tb.flags {
			if f.Refused == "" {
				continue
			}
			if !tb.step {
				seen[tb.command] = append(seen[tb.command], f.Long)
			}
			var reqs []Request
			for _, form := range forms(f) {
				args := []string{form}
				switch tb.command {
				case "sbatch":
					args = append(args, "--wrap=true")
					reqs = append(reqs, Request{Command: "sbatch", Args: []string{"job.sh"}, Cwd: w,
						Script: []byte("#!/bin/sh\n#SBATCH " + form + "\ntrue\n")})
				case "srun":
					args = append(args, "true")
				case "scancel":
					args = append(args, "1")
				case "scontrol":
					args = append(args, "show", "partition")
				}
				reqs = append(reqs, Request{Command: tb.command, Args: args, Cwd: w})
			}
			for _, req := range reqs {
				*events = nil
				rep := c.Answer(req)
				msg := string(rep.Stderr)
				want := tb.command + ": error: refused by stockade: "
				if rep.Code != 1 || !strings.HasPrefix(msg, want) || !strings.Contains(msg, f.Refused) || strings.Count(msg, "\n") != 1 {
					t.Errorf("%s (step %v) %q %q: exit %d %q; want exit 1 and one line %q…%q", tb.command, tb.step, req.Args, req.Script, rep.Code, msg, want, f.Refused)
				}
				if len(*events) != 1 || !strings.HasPrefix((*events)[0], EventRefused) {
					t.Errorf("%s %q: events %q, want one %s", tb.command, req.Args, *events, EventRefused)
				}
			}
		}
	}
	for cmd, names := range mustRefuse {
		for _, n := range names {
			if !slices.Contains(seen[cmd], n) {
				t.Errorf("%s --%s is not refused with a reason in its table", cmd, n)
			}
		}
	}
}

// TestSinfo: sinfo's options are read with its table, so a refused one
// is refused in every spelling getopt would take (-Mother, -i5, and
// behind another short option), and the real sinfo gets the options
// under their full names.
func TestSinfo(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "sinfo"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.cfg.Env = []string{"PATH=" + bin}
	w := c.cfg.Workdir
	for _, tc := range []struct {
		args   []string
		reason string
	}{
		{[]string{"-Mother"}, "sends the job to another cluster"},
		{[]string{"-M", "other"}, "sends the job to another cluster"},
		{[]string{"--clusters=other"}, "sends the job to another cluster"},
		{[]string{"--federation"}, "sends the job to another cluster"},
		{[]string{"-i5"}, "repeats until interrupted"},
		{[]string{"-i", "5"}, "repeats until interrupted"},
		{[]string{"-h", "--iterate", "5"}, "repeats until interrupted"},
		{[]string{"-hi5"}, "write each short option separately"},
		{[]string{"-hMother"}, "write each short option separately"},
		{[]string{"--cluster=other"}, "not on stockade's Slurm allowlist"},
		{[]string{"--iter=5"}, "not on stockade's Slurm allowlist"},
		{[]string{"-X"}, "not on stockade's Slurm allowlist"},
		{[]string{"debug"}, "sinfo takes options only"},
	} {
		rep := c.Answer(Request{Command: "sinfo", Args: tc.args, Cwd: w})
		if msg := string(rep.Stderr); rep.Code != 1 || !strings.Contains(msg, "refused by stockade: ") || !strings.Contains(msg, tc.reason) {
			t.Errorf("sinfo %q: exit %d %q %q; want a refusal naming %q", tc.args, rep.Code, rep.Stdout, msg, tc.reason)
		}
	}
	rep := c.Answer(Request{Command: "sinfo", Args: []string{"-h", "-p", "debug", "-o%a", "--states=idle", "-N", "--json"}, Cwd: w})
	want := "--noheader\n--partition=debug\n--format=%a\n--states=idle\n--Node\n--json\n"
	if rep.Code != 0 || string(rep.Stdout) != want {
		t.Errorf("the real sinfo got %q (exit %d, %s), want %q", rep.Stdout, rep.Code, rep.Stderr, want)
	}
}
