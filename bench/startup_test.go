package bench

import (
	"os/exec"
	"testing"
	"time"
)

// startupBudget is the budget in bench/README.md: `stockade run -- /bin/true` within 2× of bwrap.
const startupBudget = 2.0

// BenchmarkStartup times `stockade run -- /bin/true` against bwrap's
// reference sandbox, one of each per round, and reports the ratio of the
// medians. Run it with -benchtime 200x: a few hundred rounds make the medians
// stable on a busy two-core machine.
//
// The times are what a caller waits for, from fork to reaped, including the
// harness's own fork+exec (reported as native-ms, the time to run /bin/true
// with no sandbox at all), which both sides pay alike.
func BenchmarkStartup(b *testing.B) {
	bin := requireStockade(b)
	bwrap := requireBwrap(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		skip(b, "no true(1) to run: %v", err)
	}
	sides := [2]run{
		command(bin, "run", "--", "/bin/true"),
		command(bwrap, bwrapArgs("/bin/true")...),
	}
	native := command(truePath)
	var nat []time.Duration
	// A few untimed rounds fill the page cache and the dentry cache.
	for range 3 {
		for _, r := range sides {
			if _, err := r.timed(); err != nil {
				b.Fatal(err)
			}
		}
	}
	st, bw := interleave(b, func(side int) (time.Duration, error) {
		if side == 0 {
			// The no-sandbox baseline rides along in the same rounds.
			d, err := native.timed()
			if err != nil {
				return 0, err
			}
			nat = append(nat, d)
		}
		return sides[side].timed()
	})
	ratio := Ratio(Median(st), Median(bw))
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(Ratio(Quantile(st, 0.9), Quantile(bw, 0.9)), "ratio-p90")
	b.ReportMetric(Millis(Median(st)), "stockade-ms")
	b.ReportMetric(Millis(Quantile(st, 0.9)), "stockade-p90-ms")
	b.ReportMetric(Millis(Median(bw)), "bwrap-ms")
	b.ReportMetric(Millis(Quantile(bw, 0.9)), "bwrap-p90-ms")
	b.ReportMetric(Millis(Median(nat)), "native-ms")
	verdict := "within"
	if !(ratio <= startupBudget) {
		verdict = "OVER"
	}
	b.Logf("%d rounds: stockade median %.2f ms (p90 %.2f), bwrap median %.2f ms (p90 %.2f), ratio %.2f: %s the %.1f× budget",
		len(st), Millis(Median(st)), Millis(Quantile(st, 0.9)), Millis(Median(bw)), Millis(Quantile(bw, 0.9)),
		ratio, verdict, startupBudget)
}

// largeRepoBudget is what scanning a 50 000-file repository may add to a
// start (the masks and protections apply at every depth, so the planner
// walks the tree), in milliseconds of the median, measured against the
// same run in an empty project in the same rounds.
const largeRepoBudget = 250.0

// BenchmarkStartupLargeRepo times `stockade run -- /bin/true` in the
// benchmark's git repository (BENCH_GIT_FILES files, 50 000 by default, in
// 100-file directories) against the same in an empty project, one of each per
// round, and reports the median time added by the tree.
func BenchmarkStartupLargeRepo(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		skip(b, "git is not installed: %v", err)
	}
	bin := requireStockade(b)
	repo := gitTree.get(b, func(dir string) error { return makeGitRepo(dir, envInt("BENCH_GIT_FILES", 50000)) })
	empty := b.TempDir()
	inRepo, inEmpty := command(bin, "run", "--", "/bin/true"), command(bin, "run", "--", "/bin/true")
	inRepo.dir, inEmpty.dir = repo, empty
	for range 3 {
		for _, r := range []run{inRepo, inEmpty} {
			if _, err := r.timed(); err != nil {
				b.Fatal(err)
			}
		}
	}
	big, small := interleave(b, func(side int) (time.Duration, error) {
		if side == 0 {
			return inRepo.timed()
		}
		return inEmpty.timed()
	})
	added := Millis(Median(big)) - Millis(Median(small))
	b.ReportMetric(added, "added-ms")
	b.ReportMetric(Millis(Median(big)), "repo-ms")
	b.ReportMetric(Millis(Median(small)), "empty-ms")
	verdict := "within"
	if !(added <= largeRepoBudget) {
		verdict = "OVER"
	}
	b.Logf("%d rounds: in the %d-file repository %.2f ms, in an empty project %.2f ms: %.2f ms added, %s the %.0f ms budget",
		len(big), envInt("BENCH_GIT_FILES", 50000), Millis(Median(big)), Millis(Median(small)), added, verdict, largeRepoBudget)
}
