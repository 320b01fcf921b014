package console

import (
	"os"

	"golang.org/x/sys/unix"
)

// anonymous tells a pipe or a socket of the kernel's own (pipefs, sockfs)
// from a FIFO of a filesystem, whose inode is a file of the host's.
func anonymous(f *os.File) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &fs) == nil && (fs.Type == unix.PIPEFS_MAGIC || fs.Type == unix.SOCKFS_MAGIC)
}
