//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("PROBE-ERROR the probe attacks the Linux sandbox and runs only on Linux")
	os.Exit(2)
}
