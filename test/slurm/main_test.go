// Package slurm tests `stockade run --slurm` on a real Slurm cluster: the
// one-node cluster scripts/slurm.sh starts (partition debug). Every test
// here needs it, and fails (STOCKADE_MUST_WORK=1) or skips when it is down;
// the package stands alone so that a run without a cluster can leave it
// out.
package slurm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

var bin string

func TestMain(m *testing.M) {
	bin = os.Getenv("STOCKADE_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "stockade-slurm-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Chmod(dir, 0o755)
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

// cluster fails or skips t unless the test cluster answers.
func cluster(t *testing.T) {
	t.Helper()
	out, err := exec.Command("sinfo", "-h", "-p", "debug", "-o", "%a").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "up" {
		testenv.SkipOrFail(t, "the Slurm test cluster is down (as root: scripts/slurm.sh up): sinfo: %v %s", err, out)
	}
}

// env is a user environment of its own: HOME (with a ~/.ssh key the jobs
// must not read), XDG dirs, and a project with a .env to mask.
type env struct {
	t                *testing.T
	home, workdir    string
	vars             []string
	sshKey, envValue string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cluster(t)
	root := t.TempDir()
	e := &env{t: t, home: filepath.Join(root, "home"), workdir: filepath.Join(root, "home", "proj"),
		sshKey: "ssh-secret-" + filepath.Base(root), envValue: "env-secret-" + filepath.Base(root)}
	for _, d := range []string{e.workdir, filepath.Join(e.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(e.home, ".ssh", "id_test"), e.sshKey)
	write(t, filepath.Join(e.workdir, ".env"), "TOKEN="+e.envValue+"\n")
	e.vars = []string{
		"HOME=" + e.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "USER=" + os.Getenv("USER"),
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(e.home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(e.home, ".local/state"),
	}
	return e
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// result is a finished command.
type result struct {
	stdout, stderr string
	code           int
}

// run runs `stockade run --slurm [flags] -- sh -c script` in the project.
func (e *env) run(script string, flags ...string) result {
	e.t.Helper()
	args := append(append([]string{"run", "--slurm"}, flags...), "--", "sh", "-c", script)
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = e.workdir, e.vars
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("stockade run: %v", err)
	}
	return result{out.String(), errb.String(), code}
}

// outside runs a Slurm command outside stockade, as this user.
func (e *env) outside(name string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = e.workdir, e.vars
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}
