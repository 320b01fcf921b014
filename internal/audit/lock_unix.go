//go:build unix

package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// oNoFollow keeps Open from writing through a symlink planted in place of
// the log.
const oNoFollow = unix.O_NOFOLLOW

// lock takes an exclusive flock on f without waiting. The lock belongs to
// the open file description, so it also keeps out a second Open in the same
// process, and it goes away with the descriptor even if the process dies.
func lock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return os.NewSyscallError("flock", err)
}
