//go:build !linux

package e2e

import "testing"

// waitExit skips the test: it waits on a pidfd, which is Linux's.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	t.Skip("waiting for a process to exit needs a pidfd (Linux)")
}
