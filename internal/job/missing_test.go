package job

import (
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestSplitMissing: a missing name whose empty placeholder would mislead its
// tool is checked at exit; the others still get a placeholder.
func TestSplitMissing(t *testing.T) {
	wd := t.TempDir()
	cfg := mount.Config{Workdir: wd, Protect: []string{"CLAUDE.md", "rust-toolchain", "lefthook.*", ".zed/"}}
	planned, without := splitMissing(mount.Missing(cfg))
	var got []string
	for _, p := range planned {
		got = append(got, filepath.Base(p.Path))
	}
	if len(got) != 2 || got[0] != "CLAUDE.md" || got[1] != ".zed" {
		t.Errorf("placeholders for %q, want CLAUDE.md and .zed", got)
	}
	if len(without) != 1 || without[0].Path != filepath.Join(wd, "rust-toolchain") {
		t.Errorf("checked at exit: %+v, want only rust-toolchain", without)
	}
}
