package session

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate allocates n bytes of f from offset 0 on. With keepSize the file's
// size does not change (FALLOC_FL_KEEP_SIZE): appends then land in blocks
// that are already the file's, and cannot fail for want of space.
func allocate(f *os.File, n int64, keepSize bool) error {
	mode := uint32(0)
	if keepSize {
		mode = unix.FALLOC_FL_KEEP_SIZE
	}
	for {
		err := unix.Fallocate(int(f.Fd()), mode, 0, n)
		if err != unix.EINTR {
			return os.NewSyscallError("fallocate", err)
		}
	}
}
