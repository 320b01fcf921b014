// Package testenv is what the tests of every package share about the
// machine they run on: whether a missing kernel feature skips a test or
// fails it, and how to build stockade's binaries.
//
// STOCKADE_MUST_WORK=1 (set by scripts/test.sh) turns every skip for a
// missing feature into a failure: on a machine that should run
// everything, a skip hides a bug.
//
// The binaries ship built with CGO_ENABLED=0: static, with no C code and
// no dynamic loader, the build in which the sandbox's init is cloned
// without the supervisor's memory (docs/sandbox.md, "Init's contract").
// Other builds (cgo, -race, -buildmode=pie) work, with that optimisation
// off; the tests of cmd/stockade and test/e2e hold both.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MustWork reports whether STOCKADE_MUST_WORK=1: a test that cannot run
// here fails instead of skipping.
func MustWork() bool { return os.Getenv("STOCKADE_MUST_WORK") == "1" }

// SkipOrFail skips t, or fails it when MustWork.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if MustWork() {
		t.Fatalf("STOCKADE_MUST_WORK=1: "+format, args...)
	}
	t.Skipf(format, args...)
}

// ShippedEnv is the environment variables of the shipped build.
var ShippedEnv = []string{"CGO_ENABLED=0"}

// Build builds pkg (an import path, or a directory relative to the
// module's root) into dst as it ships (ShippedEnv).
func Build(dst, pkg string) error { return BuildWith(ShippedEnv, dst, pkg) }

// BuildWith builds pkg into dst with env added to this process's
// environment and flags added to go build's.
func BuildWith(env []string, dst, pkg string, flags ...string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	// No VCS stamp: the unprivileged pass of the suite builds in a checkout
	// root owns, where git refuses to read the repository as another user.
	args := append(append([]string{"build", "-buildvcs=false", "-o", dst}, flags...), pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v (%v): %w\n%s", args, env, err, out)
	}
	return nil
}

// Stockade is $STOCKADE_BIN, or cmd/stockade built as it ships into a
// temporary directory of t's; without go to build it, t skips or fails.
func Stockade(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("STOCKADE_BIN"); bin != "" {
		return bin
	}
	if _, err := exec.LookPath("go"); err != nil {
		SkipOrFail(t, "no STOCKADE_BIN and no go to build stockade: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "stockade")
	if err := Build(bin, "./cmd/stockade"); err != nil {
		SkipOrFail(t, "building stockade (set STOCKADE_BIN to use a built one): %v", err)
	}
	return bin
}

// ModuleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StaticOnly skips t in a test binary built with cgo (go test -race is
// one), saying why the test needs the shipped static build: such a test
// runs in every CI pass, which builds with CGO_ENABLED=0. It is a skip,
// not a failure, under STOCKADE_MUST_WORK=1 too: nothing is missing from
// the machine.
func StaticOnly(t testing.TB, why string) {
	t.Helper()
	if CgoBuild {
		t.Skipf("%s, which a cgo or -race test binary cannot; the CGO_ENABLED=0 build runs it", why)
	}
}
