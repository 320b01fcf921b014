// Package e2e drives the built stockade binary the way a user does: flags,
// config files, exit statuses, terminals and signals. The escape battery
// lives in test/escape.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

var bin string

func TestMain(m *testing.M) {
	if os.Getenv(goClientVar) != "" {
		os.Exit(goClient(os.Args[1]))
	}
	bin = os.Getenv("STOCKADE_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "stockade-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bin = filepath.Join(dir, "stockade")
		if err := testenv.Build(bin, "./cmd/stockade"); err != nil {
			fmt.Fprintf(os.Stderr, "building stockade: %v\n", err)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// env is an isolated user environment: its own HOME, XDG dirs and project.
type env struct {
	t       *testing.T
	home    string
	workdir string
	vars    []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, home: filepath.Join(root, "home"), workdir: filepath.Join(root, "home", "proj")}
	if err := os.MkdirAll(e.workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The engine's storages (--containers) hold files of subordinate
	// ids, which the user's rm cannot remove: removed as the README says,
	// before the temporary directory goes.
	t.Cleanup(func() {
		stores, _ := filepath.Glob(filepath.Join(e.home, ".local/share/stockade/engine/*"))
		for _, s := range stores {
			removeStore(t, s)
		}
	})
	e.vars = []string{
		"HOME=" + e.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(e.home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(e.home, ".local/state"),
	}
	return e
}

func (e *env) write(rel, content string) string {
	e.t.Helper()
	p := filepath.Join(e.workdir, rel)
	if filepath.IsAbs(rel) {
		p = rel
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs stockade with args in the project directory, stdin from in.
func (e *env) run(in string, extraEnv []string, args ...string) result {
	e.t.Helper()
	return e.runBin(bin, in, extraEnv, args...)
}

// runBin is run with the stockade binary at exe.
func (e *env) runBin(exe, in string, extraEnv []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = e.workdir
	cmd.Env = append(append([]string{}, e.vars...), extraEnv...)
	cmd.Stdin = strings.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running stockade %q: %v", args, err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// requireSandbox skips if the kernel cannot run a sandbox, unless
// STOCKADE_MUST_WORK=1 makes that a failure.
func requireSandbox(t *testing.T) {
	t.Helper()
	out, err := exec.Command(bin, "doctor").CombinedOutput()
	if err == nil {
		return
	}
	testenv.SkipOrFail(t, "the sandbox cannot run here (stockade doctor fails):\n%s", out)
}

// stderrLines returns the lines stockade itself wrote, without the start line.
func stderrLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "stockade: sandbox ") || strings.HasPrefix(l, "stockade: LOOSENED: running as root") ||
			strings.Contains(l, "limit NOT enforced") || l == "" {
			continue
		}
		out = append(out, l)
	}
	return out
}
