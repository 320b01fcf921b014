package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workloadBudget is the budget in bench/README.md: real work inside within 3% of native.
const workloadBudget = 3.0

// timedLoop wraps body in a script that runs it once untimed (warming the
// page cache for this side) and then loops times, and prints the loop's wall
// time in nanoseconds and the CPU time (user+system) of its children in clock
// ticks, with the tick rate. The same script runs inside and outside, so the
// sandbox's startup is never part of either number.
func timedLoop(setup, body string, loops int) string {
	return fmt.Sprintf(`set -e
%s
%s
cpu() { set -- $(cat /proc/$$/stat); echo $((${16} + ${17})); }
c=$(cpu)
s=$(date +%%s%%N)
i=0
while [ $i -lt %d ]; do
%s
i=$((i+1))
done
e=$(date +%%s%%N)
echo $((e-s)) $(($(cpu)-c)) $(getconf CLK_TCK)
`, setup, body, loops, body)
}

// parseLoop reads the last line of a timedLoop script's output.
func parseLoop(out []byte) (wall, cpu time.Duration, err error) {
	var ns, ticks, hz int64
	if _, err := fmt.Sscan(lastLine(out), &ns, &ticks, &hz); err != nil || ns <= 0 || hz <= 0 {
		return 0, 0, fmt.Errorf("%w: %q", errNoNumber, lastLine(out))
	}
	return time.Duration(ns), time.Duration(ticks * int64(time.Second) / hz), nil
}

// workload is one real job, run by the same script inside and outside.
type workload struct {
	dir    string // the project: the sandbox's workdir, and the cwd outside
	script string
	extra  []string // extra stockade flags (e.g. --ro for a toolchain elsewhere)
}

func (w workload) sides(bin string) [2]run {
	inside := command(bin, append(append([]string{"run", "--workdir", w.dir}, w.extra...),
		"--", "/bin/sh", "-c", w.script)...)
	outside := command("/bin/sh", "-c", w.script)
	inside.dir, outside.dir = w.dir, w.dir
	return [2]run{inside, outside}
}

// measure runs the workload inside and outside alternately and reports the
// overhead of the medians, of the minimums (the steadier estimate when the
// machine is busy: noise only ever adds time), and of the CPU time, which
// other tenants of a shared machine disturb much less than wall time.
func (w workload) measure(b *testing.B, bin string) {
	sides := w.sides(bin)
	var cpu [2][]time.Duration
	loopTime := func(side int) (time.Duration, error) {
		out, err := sides[side].output()
		if err != nil {
			return 0, fmt.Errorf("%s: %w: %s", []string{"inside", "outside"}[side], err, lastLine(out))
		}
		wall, c, err := parseLoop(out)
		cpu[side] = append(cpu[side], c)
		return wall, err
	}
	in, out := interleave(b, loopTime)
	over := (Ratio(Median(in), Median(out)) - 1) * 100
	overMin := (Ratio(Quantile(in, 0), Quantile(out, 0)) - 1) * 100
	overCPU := (Ratio(Median(cpu[0]), Median(cpu[1])) - 1) * 100
	b.ReportMetric(over, "overhead-%")
	b.ReportMetric(overMin, "overhead-min-%")
	b.ReportMetric(overCPU, "cpu-overhead-%")
	b.ReportMetric(Millis(Median(in)), "inside-ms")
	b.ReportMetric(Millis(Median(out)), "outside-ms")
	b.ReportMetric(Millis(Quantile(out, 0.9)-Quantile(out, 0)), "outside-spread-ms")
	verdict := "within"
	if !(over <= workloadBudget) {
		verdict = "OVER"
	}
	b.Logf("%d rounds: inside median %.1f ms, outside median %.1f ms: overhead %+.2f%% (of minimums %+.2f%%, of CPU time %+.2f%%): %s the %.0f%% budget",
		len(in), Millis(Median(in)), Millis(Median(out)), over, overMin, overCPU, verdict, workloadBudget)
}

// BenchmarkWorkload compares real work inside one sandbox with the same work
// on the host. Run it with -benchtime 5x or more; each round is a few seconds.
//
//	GitStatus: `git status` BENCH_GIT_LOOPS (20) times over a committed tree of
//	           BENCH_GIT_FILES (50000) files: stat-heavy, so it shows what
//	           Landlock and seccomp add per syscall.
//	GoBuild:   `go build` BENCH_GO_BUILDS (5) times of a generated module of
//	           10 packages × 20 files, every package recompiled each time, the
//	           standard library from a warm cache: CPU-heavy, with many
//	           short-lived processes.
func BenchmarkWorkload(b *testing.B) {
	b.Run("GitStatus", func(b *testing.B) {
		if _, err := exec.LookPath("git"); err != nil {
			skip(b, "git is not installed: %v", err)
		}
		bin := requireStockade(b)
		files := envInt("BENCH_GIT_FILES", 50000)
		dir := gitTree.get(b, func(dir string) error { return makeGitRepo(dir, files) })
		setup := `export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_OPTIONAL_LOCKS=0`
		body := `git status --porcelain >/dev/null`
		w := workload{dir: dir, script: timedLoop(setup, body, envInt("BENCH_GIT_LOOPS", 20))}
		w.measure(b, bin)
	})
	b.Run("GoBuild", func(b *testing.B) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			skip(b, "go is not installed: %v", err)
		}
		goBin, _ = filepath.Abs(goBin)
		bin := requireStockade(b)
		dir := goTree.get(b, func(dir string) error { return makeGoModule(dir, goBin, 10, 20) })
		// A new seed every build, unique across both sides, so that no build
		// is ever a cache hit for the module's own packages.
		body := fmt.Sprintf(`printf 'package seed\n\nconst Seed = %%s\n' "$(date +%%s%%N)" > seed/seed.go
%q build -o /dev/null .`, goBin)
		w := workload{dir: dir, script: timedLoop(goEnv, body, envInt("BENCH_GO_BUILDS", 5))}
		if root := goRoot(goBin); root != "" && !underSystemDir(root) {
			w.extra = []string{"--ro", root}
		}
		w.measure(b, bin)
	})
}

// goRoot is the toolchain directory of goBin (…/go for …/go/bin/go).
func goRoot(goBin string) string {
	if real, err := filepath.EvalSymlinks(goBin); err == nil {
		goBin = real
	}
	return filepath.Dir(filepath.Dir(goBin))
}

// underSystemDir reports whether the sandbox already shows p read-only.
func underSystemDir(p string) bool {
	for _, d := range []string{"/usr", "/opt", "/bin", "/sbin", "/lib", "/lib64", "/etc"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
