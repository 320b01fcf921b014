package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate allocates n bytes of f from off on without changing its size
// (FALLOC_FL_KEEP_SIZE): the blocks are the log's, so writes into them
// cannot fail for want of space, and nobody else can take them; readers see
// the same file size as before.
func allocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err != unix.EINTR {
			return os.NewSyscallError("fallocate", err)
		}
	}
}

// unsupported reports whether err says the filesystem cannot preallocate.
func unsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS)
}
