package e2e

import (
	"strings"
	"testing"
)

// TestReviewAtExit: a file the user will run soon that the command wrote
// (a CI workflow) is not blocked, but named at exit, one line a path; a run
// that touches none prints no REVIEW line.
func TestReviewAtExit(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	r := e.run("", nil, "run", "--", "sh", "-c", "mkdir -p .github/workflows; echo x > .github/workflows/ci.yml")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	want := "stockade: REVIEW: .github/workflows/ci.yml: created (file, 2 bytes)"
	if !strings.Contains(r.stderr, want+"\n") {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	r = e.run("", nil, "run", "--", "sh", "-c", "echo x > notes.txt")
	if r.code != 0 || strings.Contains(r.stderr, "REVIEW") {
		t.Errorf("a run that wrote no watched file: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
