// Command abtime times several commands interleaved, round-robin with the
// starting command rotating every round, and prints each one's median and p90
// and its ratio to the last (the reference). It is the A/B tool behind the
// startup profile in bench/README.md: on a shared machine, only commands
// measured in the same rounds can be compared.
//
//	go run ./bench/abtime -n 200 -- '/tmp/a run -- /bin/true' '/tmp/b run -- /bin/true' 'bwrap ...'
//
// Each command is split on spaces (no quoting); stdin is /dev/null and output
// is discarded. A command that fails stops the run (unless -anyexit): no
// number is made up.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/stockade-dev/stockade/bench"
)

func main() {
	n := flag.Int("n", 100, "rounds")
	warm := flag.Int("warmup", 3, "untimed rounds first")
	anyExit := flag.Bool("anyexit", false, "accept a non-zero exit status (to time a failure path)")
	flag.Parse()
	cmds := flag.Args()
	if len(cmds) == 0 {
		fmt.Fprintln(os.Stderr, "usage: abtime [-n rounds] -- 'cmd args' 'cmd args' ... (the last is the reference)")
		os.Exit(2)
	}
	samples := make([][]time.Duration, len(cmds))
	for round := range *warm + *n {
		for k := range cmds {
			i := (k + round) % len(cmds)
			d, err := timeOne(cmds[i])
			var exit *exec.ExitError
			if *anyExit && errors.As(err, &exit) {
				err = nil
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "abtime: %s: %v\n", cmds[i], err)
				os.Exit(1)
			}
			if round >= *warm {
				samples[i] = append(samples[i], d)
			}
		}
	}
	ref := bench.Median(samples[len(cmds)-1])
	fmt.Printf("| command | median ms | p90 ms | min ms | ratio to last |\n|---|---:|---:|---:|---:|\n")
	for i, c := range cmds {
		s := samples[i]
		fmt.Printf("| `%s` | %.2f | %.2f | %.2f | %.2f |\n", c, bench.Millis(bench.Median(s)),
			bench.Millis(bench.Quantile(s, 0.9)), bench.Millis(bench.Quantile(s, 0)), bench.Ratio(bench.Median(s), ref))
	}
}

func timeOne(command string) (time.Duration, error) {
	f := strings.Fields(command)
	cmd := exec.Command(f[0], f[1:]...)
	start := time.Now()
	err := cmd.Run()
	return time.Since(start), err
}
