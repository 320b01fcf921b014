package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// scratch holds everything the benchmarks make (the stockade binary, the
// generated trees, the sandbox HOME); TestMain removes it. project, in it,
// is the empty project the runs start in: not scratch itself, which holds
// the runs' records (two audit files more each round) and the generated
// trees, which the start's scan and the exit checks would walk.
var scratch, project string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stockade-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: making a scratch directory:", err)
		os.Exit(1)
	}
	// The sandbox maps the caller's uid to itself, so a tree under a 0700
	// directory is still readable inside; 0755 keeps it so for any user.
	os.Chmod(dir, 0o755)
	scratch = dir
	project = filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench: making the project directory:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// skip skips b with why, or fails it when STOCKADE_MUST_WORK=1 (the test
// suite's rule: on a machine that should run everything, a skip hides a bug).
func skip(b *testing.B, format string, args ...any) {
	b.Helper()
	testenv.SkipOrFail(b, format, args...)
}

var (
	buildOnce sync.Once
	binPath   string
	binErr    error
)

// stockadeBin is $STOCKADE_BIN, or stockade built from this module with
// CGO_ENABLED=0, the way it ships.
func stockadeBin(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("STOCKADE_BIN"); p != "" {
			binPath, binErr = filepath.Abs(p)
			return
		}
		binPath = filepath.Join(scratch, "stockade")
		if err := testenv.Build(binPath, "./cmd/stockade"); err != nil {
			binErr = fmt.Errorf("building stockade: %v", err)
		}
	})
	if binErr != nil {
		b.Fatal(binErr)
	}
	return binPath
}

// sandboxEnv is the environment stockade runs with: the caller's, with the
// sandbox HOME and the runs' records (audit logs, one per run) kept in the
// scratch directory instead of ~/.local/share and ~/.local/state, which
// thousands of rounds would fill.
func sandboxEnv() []string {
	return append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(scratch, "data"), "XDG_STATE_HOME="+filepath.Join(scratch, "state"))
}

// requireStockade returns the stockade binary once it has shown that it can
// start a sandbox here, and skips b with stockade's own reason otherwise.
func requireStockade(b *testing.B) string {
	b.Helper()
	bin := stockadeBin(b)
	out, err := command(bin, "run", "--", "/bin/true").output()
	if err != nil {
		skip(b, "stockade cannot start a sandbox here (%v): %s", err, lastLine(out))
	}
	return bin
}

// requireBwrap returns the path of bwrap once it has run the reference
// command, and skips b otherwise.
func requireBwrap(b *testing.B) string {
	b.Helper()
	p, err := exec.LookPath("bwrap")
	if err != nil {
		skip(b, "bwrap is not installed, so there is no reference to compare with; install it (apt-get install -y bubblewrap)")
	}
	if out, err := command(p, bwrapArgs("/bin/true")...).output(); err != nil {
		skip(b, "bwrap cannot run here (%v): %s", err, lastLine(out))
	}
	return p
}

// bwrapArgs is the reference sandbox of bench/README.md.
func bwrapArgs(argv ...string) []string {
	return append([]string{"--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}, argv...)
}

// run is one command to time, made fresh for every run (an exec.Cmd cannot be
// started twice).
type run struct {
	argv []string
	dir  string
	env  []string
}

func command(name string, args ...string) run {
	return run{argv: append([]string{name}, args...), dir: project, env: sandboxEnv()}
}

// output runs r with stdin on /dev/null (no terminal, so stockade makes no
// PTY and both sides do the same work) and returns stdout, or the combined
// output on failure.
func (r run) output() ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return append(stdout.Bytes(), stderr.Bytes()...), err
	}
	return stdout.Bytes(), nil
}

// timed runs r and returns its wall-clock time, from fork to reaped.
func (r run) timed() (time.Duration, error) {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %s", strings.Join(r.argv, " "), err, lastLine(stderr.Bytes()))
	}
	return d, nil
}

// interleave calls measure(0) and measure(1) once per b.Loop round, swapping
// which goes first every round, so that neither side always runs right after
// the other has warmed (or cooled) the caches. It returns the samples of each.
func interleave(b *testing.B, measure func(side int) (time.Duration, error)) (a, r []time.Duration) {
	b.Helper()
	out := [2][]time.Duration{}
	round := 0
	for b.Loop() {
		for k := range 2 {
			side := k ^ round&1
			d, err := measure(side)
			if err != nil {
				b.Fatal(err)
			}
			out[side] = append(out[side], d)
		}
		round++
	}
	return out[0], out[1]
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if l := lines[len(lines)-1]; l != "" {
		return l
	}
	return "(no output)"
}

var errNoNumber = errors.New("the timed script printed no duration")
