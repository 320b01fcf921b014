package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// forbidden are the packages the shipped build of stockade must not link:
// runtime/cgo brings C's per-thread state (glibc's rseq and TLS areas) into
// every thread, which turns off the clone of init without the
// supervisor's memory (internal/sandbox, dropMemory), and a dynamic
// loader with it.
var forbidden = []string{"runtime/cgo"}

// deps lists the packages cmd/stockade links with env added.
func deps(t *testing.T, env ...string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-buildvcs=false", "-deps", ".") // see testenv.BuildWith
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", env, err)
	}
	return strings.Fields(string(out))
}

// TestShippedDeps is the dependency wall of the shipped build
// (CGO_ENABLED=0, testenv.ShippedEnv).
func TestShippedDeps(t *testing.T) {
	got := deps(t, testenv.ShippedEnv...)
	for _, p := range forbidden {
		if slices.Contains(got, p) {
			t.Errorf("the shipped build of cmd/stockade links %s; find the import with: CGO_ENABLED=0 go list -deps -f '{{.ImportPath}} {{.Imports}}' ./cmd/stockade", p)
		}
	}
	// The wall can see what it guards: with cgo on, runtime/cgo is linked
	// (by net and os/user), so a check that never finds it is broken.
	if !slices.Contains(deps(t, "CGO_ENABLED=1"), "runtime/cgo") {
		t.Error("go list -deps with CGO_ENABLED=1 does not list runtime/cgo: the wall above checks nothing")
	}
}
