package tripwire

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDiffUnchanged(t *testing.T) {
	w, roots := fixture(t)
	s, err := Take(roots)
	must(t, err)
	// Reads, a no-op write and a new timestamp change nothing.
	_, err = os.ReadFile(filepath.Join(w, ".env"))
	must(t, err)
	f, err := os.OpenFile(filepath.Join(w, "AGENTS.md"), os.O_WRONLY, 0)
	must(t, err)
	must(t, f.Close())
	must(t, os.Chtimes(filepath.Join(w, ".git/config"), time0, time0))
	write(t, filepath.Join(w, "src/other.go"), "package main\n") // not covered
	changes, err := s.Diff()
	must(t, err)
	if len(changes) != 0 {
		t.Fatalf("Diff on unchanged state = %v, want none", changes)
	}
	restored, err := s.Restore()
	if err != nil || len(restored) != 0 {
		t.Fatalf("Restore on unchanged state = %v, %v; want nothing", restored, err)
	}
}

// TestDiffRestore makes each change, checks that Diff names it, and that
// Restore puts the fixture back byte for byte (content, mode, owner, absence).
func TestDiffRestore(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			if m.root && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			w, roots := fixture(t)
			before := dump(t, w)
			s, err := Take(roots)
			must(t, err)
			m.do(t, w)

			changes, err := s.Diff()
			must(t, err)
			want := Change{Path: filepath.Join(w, m.path), Kind: m.kind}
			if !slices.ContainsFunc(changes, func(c Change) bool { return c.Path == want.Path && c.Kind == want.Kind }) {
				t.Fatalf("Diff = %v, want it to include %s %s", changes, want.Kind, want.Path)
			}

			restored, err := s.Restore()
			if m.cannotRestore != "" {
				if err == nil || !strings.Contains(err.Error(), m.cannotRestore) {
					t.Fatalf("Restore error = %v, want one with %q", err, m.cannotRestore)
				}
				return
			}
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if !slices.Equal(restored, changes) {
				t.Errorf("Restore restored %v, want %v", restored, changes)
			}
			after := dump(t, w)
			for _, k := range m.keeps {
				delete(after, k)
			}
			if d := diffDumps(before, after); len(d) > 0 {
				t.Errorf("after Restore:\n%s", strings.Join(d, "\n"))
			}
			if changes, err := s.Diff(); err != nil || len(changes) != 0 {
				t.Errorf("Diff after Restore = %v, %v; want none", changes, err)
			}
		})
	}
}

func TestRestoreTooLarge(t *testing.T) {
	w := t.TempDir()
	big := filepath.Join(w, "big")
	content := bytes.Repeat([]byte("x"), int(DefaultLimits.MaxKeptFile)+1)
	must(t, os.WriteFile(big, content, 0o644))
	small := filepath.Join(w, "small")
	must(t, os.WriteFile(small, []byte("small\n"), 0o644))
	s, err := Take([]string{big, small})
	must(t, err)

	must(t, os.WriteFile(big, []byte("evil"), 0o644))
	must(t, os.Remove(small))
	restored, err := s.Restore()
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big) {
		t.Fatalf("Restore error = %v, want ErrTooLarge naming %s", err, big)
	}
	if want := []Change{{small, Removed, "file, 6 bytes"}}; !slices.Equal(restored, want) {
		t.Errorf("restored = %v, want %v", restored, want)
	}
	if b, _ := os.ReadFile(small); string(b) != "small\n" {
		t.Errorf("small = %q after Restore", b)
	}

	// Its mode can be restored all the same.
	t2 := t.TempDir()
	big2 := filepath.Join(t2, "big")
	must(t, os.WriteFile(big2, content, 0o644))
	s, err = Take([]string{big2})
	must(t, err)
	must(t, os.Chmod(big2, 0o777))
	if _, err := s.Restore(); err != nil {
		t.Fatalf("Restore of a mode change on a big file: %v", err)
	}
	if fi, _ := os.Stat(big2); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode after Restore = %v", fi.Mode())
	}
}

func TestTakeLimits(t *testing.T) {
	w, roots := fixture(t)
	tests := []struct {
		name string
		lim  Limits
		want string // in the error; "" for none
	}{
		{"defaults", DefaultLimits, ""},
		{"entries", Limits{MaxEntries: 3, MaxDepth: 64, MaxHashed: 1 << 20}, "more than 3 entries"},
		{"hashed", Limits{MaxEntries: 100, MaxDepth: 64, MaxHashed: 10}, "more than 0 MiB of files to hash"},
		{"depth", Limits{MaxEntries: 100, MaxDepth: 1, MaxHashed: 1 << 20}, "more than 1 directory levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.lim.Take(roots)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Take: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), w)):
				t.Fatalf("Take error = %v, want one with %q and the path", err, tt.want)
			}
		})
	}
	if _, err := Take([]string{"relative/path"}); err == nil {
		t.Error("Take of a relative path succeeded")
	}
}

// TestDiffLimitIsAChange: a tree that grows past the limits after Take is a
// change, not an error that would blind the tripwire.
func TestDiffLimitIsAChange(t *testing.T) {
	w, _ := fixture(t)
	hooks := filepath.Join(w, ".git/hooks")
	lim := DefaultLimits
	lim.MaxEntries = 8
	s, err := lim.Take([]string{hooks})
	must(t, err)
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		write(t, filepath.Join(hooks, n), n)
	}
	changes, err := s.Diff()
	must(t, err)
	if len(changes) != 1 || changes[0].Kind != Modified || !strings.Contains(changes[0].Detail, "more than 8 entries") {
		t.Fatalf("Diff = %v, want one change for the limit", changes)
	}
	if _, err := s.Restore(); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if ents, _ := os.ReadDir(hooks); len(ents) != 3 {
		t.Errorf("after Restore %s holds %d entries, want 3", hooks, len(ents))
	}
}
