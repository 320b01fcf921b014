package cli

import (
	"encoding/hex"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
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

// mkdirBelow makes rel and its missing parents (mode 0700) below root, an
// absolute path opened through no symlink, and follows none in rel.
func mkdirBelow(root, rel string) error {
	top, err := beneath.OpenRootNoLinks(root)
	if err != nil {
		return err
	}
	defer top.Close()
	return top.MkdirAll(rel, 0o700)
}
