package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/mount"
)

func TestExcludesFileEnv(t *testing.T) {
	got := excludesFileEnv([]string{"A=1", "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=x", "B=2"}, "/f")
	want := []string{"A=1", "GIT_CONFIG_KEY_0=x", "B=2", "GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_2=core.excludesFile", "GIT_CONFIG_VALUE_2=/f"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = excludesFileEnv([]string{"GIT_CONFIG_COUNT=junk"}, "/f")
	want = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.excludesFile", "GIT_CONFIG_VALUE_0=/f"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestSetTops: each placeholder gets the top of the work tree its tree is
// in; a tree in none gets "".
func TestSetTops(t *testing.T) {
	repo, plain := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "sub")
	os.Mkdir(sub, 0o755)
	ps := []mount.Placeholder{{Path: plain + "/CLAUDE.md", Root: plain}, {Path: sub + "/.env", Root: sub}}
	if !setTops(ps, plain, "") || ps[0].Top != "" || ps[1].Top != repo {
		t.Errorf("setTops: %+v", ps)
	}
	ps = ps[:1]
	if setTops(ps, plain, "") {
		t.Errorf("setTops says a tree in no repository is in one: %+v", ps)
	}
}

// TestExcludeProblem: a problem is a warning once per repository; a
// skipped repository is a debug line.
func TestExcludeProblem(t *testing.T) {
	var warned, debugged []string
	report := excludeProblem(Hooks{
		Warn:  func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) },
		Debug: func(what string, v any) { debugged = append(debugged, fmt.Sprint(v)) },
	})
	report(&mount.ExcludeError{Top: "/a", Err: errors.New("one")})
	report(&mount.ExcludeError{Top: "/a", Err: errors.New("two")})
	report(&mount.ExcludeError{Top: "/b", Err: fmt.Errorf("%w: no info", mount.ErrExcludeSkipped)})
	if len(warned) != 1 || !strings.Contains(warned[0], "/a: one") {
		t.Errorf("warnings: %q, want one about /a", warned)
	}
	if len(debugged) != 1 || !strings.Contains(debugged[0], "/b") {
		t.Errorf("debug lines: %q, want one about /b", debugged)
	}
}
