package cli

import (
	"encoding/hex"
	"fmt"

	"golang.org/x/sys/unix"
)

// newID makes a session ID from the kernel's CSPRNG. It calls getrandom(2)
// itself, which is where crypto/rand reads too: nothing else in a run uses
// crypto/rand, and its first call costs 20 to 30 µs more at every start.
func newID() (string, error) {
	b := make([]byte, 3)
	if n, err := unix.Getrandom(b, 0); err != nil || n != len(b) {
		if err == nil {
			err = fmt.Errorf("getrandom returned %d of %d bytes", n, len(b))
		}
		return "", fmt.Errorf("making a session id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// seccompAvailable reports whether the kernel has seccomp.
func seccompAvailable() error {
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err
}
