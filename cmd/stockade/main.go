// Command stockade runs AI coding agents in a kernel-enforced Linux sandbox.
package main

import (
	"os"

	"github.com/stockade-dev/stockade/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args))
}
