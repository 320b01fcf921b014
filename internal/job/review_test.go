package job

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestReviewAt: what the run wrote among the files the user runs soon is
// reported through Hooks.OnFinding once the run is over, one line a path.
func TestReviewAt(t *testing.T) {
	wd := t.TempDir()
	var lines []string
	taken, _, done := reviewAt(Job{Policy: policy.Policy{Workdir: wd}}, Hooks{OnFinding: func(f Finding) { lines = append(lines, f.String()) }})
	taken()
	if err := os.MkdirAll(filepath.Join(wd, ".github/workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, ".github/workflows/ci.yml"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done()
	if len(lines) != 1 || lines[0] != "REVIEW: .github/workflows/ci.yml: created (file, 2 bytes)" {
		t.Errorf("REVIEW lines %q", lines)
	}
}

// TestReviewCheckedBeforeReport: the files are read when check is called
// (at the end of the command), not when the report is printed later; what
// changes in between is not the run's.
func TestReviewCheckedBeforeReport(t *testing.T) {
	wd := t.TempDir()
	var lines []string
	taken, check, report := reviewAt(Job{Policy: policy.Policy{Workdir: wd}}, Hooks{OnFinding: func(f Finding) { lines = append(lines, f.String()) }})
	taken()
	if err := os.MkdirAll(filepath.Join(wd, ".github/workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, ".github/workflows/ci.yml"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check()
	if err := os.WriteFile(filepath.Join(wd, ".github/workflows/later.yml"), []byte("y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report()
	if len(lines) != 1 || lines[0] != "REVIEW: .github/workflows/ci.yml: created (file, 2 bytes)" {
		t.Errorf("REVIEW lines %q", lines)
	}
}
