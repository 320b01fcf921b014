package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// envInt is the integer in $name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// fixture is a generated tree made once per process and shared by the
// benchmarks that use it.
type fixture struct {
	once sync.Once
	dir  string
	err  error
}

func (f *fixture) get(b *testing.B, make func(dir string) error) string {
	b.Helper()
	f.once.Do(func() {
		dir, err := os.MkdirTemp(scratch, "tree-")
		if err == nil {
			os.Chmod(dir, 0o755)
			err = make(dir)
		}
		f.dir, f.err = dir, err
	})
	if f.err != nil {
		b.Fatalf("generating the benchmark tree: %v", f.err)
	}
	return f.dir
}

var gitTree, goTree fixture

// makeGitRepo writes files small files in 100-file directories and commits
// them, so that `git status` has a clean index of that many entries to check.
func makeGitRepo(dir string, files int) error {
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("e%02d", i/1000%10))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		body := fmt.Sprintf("file %d\n%s\n", i, strings.Repeat("x", i%200))
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.txt", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "tree"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, out)
		}
	}
	return nil
}

// goEnv is the environment every go command of the benchmark runs with,
// inside and outside alike: caches and config in the tree, no network, no
// toolchain switch, so both sides do exactly the same work.
const goEnv = `export HOME="$PWD/.home" XDG_CONFIG_HOME="$PWD/.home" GOCACHE="$PWD/.cache/go-build" \
GOPATH="$PWD/.gopath" GOENV=off GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
`

// makeGoModule writes a module of pkgs packages of files files each. Every
// package imports package seed, whose constant the timed loop changes before
// each build: all packages then compile again while the standard library,
// built once here, stays in the cache.
func makeGoModule(dir, goBin string, pkgs, files int) error {
	w := func(rel, body string) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(body), 0o644)
	}
	if err := w("go.mod", "module benchmod\n\ngo 1.22\n"); err != nil {
		return err
	}
	if err := w("seed/seed.go", "package seed\n\nconst Seed = 0\n"); err != nil {
		return err
	}
	var imports, uses strings.Builder
	for p := range pkgs {
		name := fmt.Sprintf("p%02d", p)
		fmt.Fprintf(&imports, "\t%q\n", "benchmod/"+name)
		fmt.Fprintf(&uses, "\tsum += %s.F00(1)\n", name)
		for f := range files {
			if err := w(fmt.Sprintf("%s/f%02d.go", name, f), goFile(name, f)); err != nil {
				return err
			}
		}
	}
	main := fmt.Sprintf("package main\n\nimport (\n\t\"fmt\"\n%s)\n\nfunc main() {\n\tsum := 0\n%s\tfmt.Println(sum)\n}\n", imports.String(), uses.String())
	if err := w("main.go", main); err != nil {
		return err
	}
	// Build once so the standard library is in the module's own cache.
	cmd := exec.Command("/bin/sh", "-c", goEnv+`"$0" build -o /dev/null .`, goBin)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("first go build: %v: %s", err, out)
	}
	return nil
}

// goFile is one source file with enough in it (generics, closures, a type
// switch, maps) to keep the compiler busy for a moment.
func goFile(pkg string, f int) string {
	return fmt.Sprintf(`package %[1]s

import (
	"sort"
	"strings"

	"benchmod/seed"
)

type T%02[2]d[K comparable, V any] struct{ m map[K]V; keys []K }

func (t *T%02[2]d[K, V]) Put(k K, v V) {
	if t.m == nil {
		t.m = map[K]V{}
	}
	if _, ok := t.m[k]; !ok {
		t.keys = append(t.keys, k)
	}
	t.m[k] = v
}

func Kind%02[2]d(v any) string {
	switch x := v.(type) {
	case int:
		return strings.Repeat("i", x%%3)
	case string:
		return strings.ToUpper(x)
	case []int:
		sort.Ints(x)
		return "slice"
	default:
		return "other"
	}
}

func F%02[2]d(n int) int {
	t := &T%02[2]d[string, int]{}
	for i := 0; i < n+seed.Seed; i++ {
		t.Put(Kind%02[2]d(i), i)
	}
	acc := func(k string) int { return len(k) + t.m[k] }
	s := 0
	for _, k := range t.keys {
		s += acc(k)
	}
	return s
}
`, pkg, f)
}
