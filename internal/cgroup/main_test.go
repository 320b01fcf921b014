package cgroup

import (
	"bufio"
	"fmt"
	"os"
	"testing"
	"time"
)

// helperEnv names the role a re-executed test binary plays instead of testing.
const helperEnv = "STOCKADE_CGROUP_TEST_HELPER"

// Roles of the re-executed test binary. Each waits for a line on stdin, so the
// test can move it into a group before it does anything.
var helpers = map[string]func(){
	// alloc touches 256 MiB of memory, page by page, and says so if it survives.
	"alloc": func() {
		b := make([]byte, 256<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b))
	},
	// spin keeps a CPU busy for 500 ms of wall-clock time.
	"spin": func() {
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		}
	},
}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "waiting for the go-ahead:", err)
			os.Exit(2)
		}
		helpers[role]()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
