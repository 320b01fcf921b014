package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeSrun is a real srun for the tests: it does what the job's wrapper
// does on the node (writes ID into the job directory, its --chdir), then
// waits for the file RELEASE before it prints and ends.
const fakeSrun = `#!/bin/sh
for a; do case $a in --chdir=*) dir=${a#--chdir=};; esac; done
printf '%s\n' "$ID" > "$dir/slurm-job-id"
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
echo done
`

// TestSrunRegisteredWhileRunning: an srun job is in the registry (so in
// the queries' and scancel's scope) as soon as its wrapper writes its id
// on the node, long before srun ends; its submit event names it once.
func TestSrunRegisteredWhileRunning(t *testing.T) {
	c, events := newChaperon(t, Admin{})
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(fakeSrun), 0o755); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(bin, "release")
	c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "ID=4242", "RELEASE=" + release}
	done := make(chan Reply)
	go func() { done <- c.Answer(Request{Command: "srun", Args: []string{"sleep", "100"}, Cwd: c.cfg.Workdir}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(c.scoped(), "4242") {
		select {
		case rep := <-done:
			t.Fatalf("srun ended (exit %d %q %q) before its job entered the registry", rep.Code, rep.Stdout, rep.Stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the running srun's job is not in the registry")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if rep.Code != 0 || string(rep.Stdout) != "done\n" {
		t.Fatalf("srun: exit %d %q %q", rep.Code, rep.Stdout, rep.Stderr)
	}
	if n := strings.Count(strings.Join(c.scoped(), " "), "4242"); n != 1 {
		t.Errorf("the registry holds job 4242 %d times", n)
	}
	if len(*events) != 1 || (*events)[0] != EventSubmit+": " {
		t.Errorf("events %q, want one %s", *events, EventSubmit)
	}
}

// TestSrunJobIDFile: only a whole plain id in the job directory's file
// is taken; a symlink there is not followed.
func TestSrunJobIDFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, jobIDFile)
	for _, tc := range []struct{ data, want string }{
		{"", ""}, {"12", ""}, {"12\n", "12"}, {"12 13\n", ""}, {"-1\n", ""}, {"x\n", ""}, {strings.Repeat("1", 100) + "\n", ""},
	} {
		os.WriteFile(p, []byte(tc.data), 0o600)
		if got := readJobID(dir); got != tc.want {
			t.Errorf("readJobID(%q) = %q, want %q", tc.data, got, tc.want)
		}
	}
	os.Remove(p)
	other := filepath.Join(t.TempDir(), "id")
	os.WriteFile(other, []byte("77\n"), 0o600)
	os.Symlink(other, p)
	if got := readJobID(dir); got != "" {
		t.Errorf("readJobID followed a symlink: %q", got)
	}
}
