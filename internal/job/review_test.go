package job

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestReviewAt: what the run wrote among the files the user runs soon is
// reported through Hooks.Review once the run is over, one line a path.
func TestReviewAt(t *testing.T) {
	wd := t.TempDir()
	var lines []string
	done := reviewAt(Job{Policy: policy.Policy{Workdir: wd}}, Hooks{Review: func(l string) { lines = append(lines, l) }})
	if err := os.MkdirAll(filepath.Join(wd, ".github/workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, ".github/workflows/ci.yml"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done()
	if len(lines) != 1 || lines[0] != ".github/workflows/ci.yml: created (file, 2 bytes)" {
		t.Errorf("REVIEW lines %q", lines)
	}
}

// TestReviewAtProtectedGlob: a name matching a protected glob that did not
// exist at start gets no placeholder; the command creating it is named at exit.
func TestReviewAtProtectedGlob(t *testing.T) {
	wd := t.TempDir()
	var warned []string
	h := Hooks{Warn: func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) }, Review: func(string) {}}
	done := reviewAt(Job{Policy: policy.Policy{Workdir: wd, Protect: []string{"lefthook.*", "CLAUDE.md"}}}, h)
	if err := os.WriteFile(filepath.Join(wd, "lefthook.yml"), []byte("pre-commit:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done()
	want := "the command created " + filepath.Join(wd, "lefthook.yml") + ", which stockade protects when it exists"
	if len(warned) != 1 || !strings.HasPrefix(warned[0], want) {
		t.Errorf("warnings %q, want one starting %q", warned, want)
	}
}
