// GOMAXPROCS is the CPU count, not derived from the cgroup's CPU limit and
// not kept up with it: stockade's work is waiting, not computing, and the
// runtime's cgroup machinery cost every start (bench/abtime, 200 rounds:
// 2.11x bwrap with it, 2.06x without the limit, 2.08x without the
// updates, 1.97x without both).

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command stockade runs AI coding agents in a kernel-enforced Linux sandbox.
package main

import (
	"os"

	"github.com/stockade-dev/stockade/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args))
}
