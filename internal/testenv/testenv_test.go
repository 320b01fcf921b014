package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records how SkipOrFail ended it: the
// first of Fatalf and Skipf, each of which would end a real test.
type recorder struct {
	testing.TB
	how string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	if r.how == "" {
		r.how = "fail: " + fmt.Sprintf(format, args...)
	}
}
func (r *recorder) Skipf(format string, args ...any) {
	if r.how == "" {
		r.how = "skip: " + fmt.Sprintf(format, args...)
	}
}

func TestSkipOrFail(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"1", "fail: STOCKADE_MUST_WORK=1: no tmux"},
		{"", "skip: no tmux"},
		{"0", "skip: no tmux"},
	} {
		t.Setenv("STOCKADE_MUST_WORK", tc.env)
		r := &recorder{TB: t}
		SkipOrFail(r, "no %s", "tmux")
		if r.how != tc.want {
			t.Errorf("STOCKADE_MUST_WORK=%q: %q, want %q", tc.env, r.how, tc.want)
		}
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "stockade")); err != nil {
		t.Errorf("ModuleRoot = %s, which has no cmd/stockade: %v", root, err)
	}
}
