//go:build linux

package caps

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SecureBits makes "root" mean nothing special to execve and locks that in:
// even uid 0 inside the sandbox gains no capability by executing a binary.
const SecureBits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS itself off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// LastCap returns the highest capability number the kernel knows.
func LastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return unix.CAP_LAST_CAP
}
