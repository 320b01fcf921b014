// Package bench measures stockade against the budget in bench/README.md, side by
// side with a reference in one run, and reports ratios rather than times:
// the machines it runs on are shared and noisy, and a ratio of two
// interleaved measurements survives noise that a single time does not.
//
// The package has no library code of its own beyond small statistics
// helpers; the benchmarks are the point:
//
//	go test -run XXX -bench Startup  -benchtime 200x ./bench/
//	go test -run XXX -bench Workload -benchtime 5x   ./bench/
//
// BenchmarkStartup runs `stockade run -- /bin/true` and
// `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true`
// alternately and reports the ratio of the medians (budget: 2.0).
//
// BenchmarkWorkload runs the same timed loop (`git status` over a large tree,
// `go build` of a generated module) inside one sandbox and directly on the
// host, alternately, and reports the overhead in percent (budget: 3). The loop
// times itself, so sandbox startup is not part of the number.
//
// Every benchmark skips, saying why, when what it compares cannot run here
// (no bwrap, no user namespaces, no git); with STOCKADE_MUST_WORK=1 a skip is
// a failure instead. A number is never made up: a failed run fails the
// benchmark. See README.md for how to read the results, and run.sh for the
// whole comparison as one markdown table.
package bench
