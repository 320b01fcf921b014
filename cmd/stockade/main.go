// The runtime neither reads the cgroup's CPU limit at each start (on a
// hybrid hierarchy that cost every start a fifth of a millisecond) nor
// watches it: stockade's work is waiting, not computing.

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
