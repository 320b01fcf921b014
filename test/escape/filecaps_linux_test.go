package escape

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// setFileCaps gives the file at p the capabilities CAP_SYS_ADMIN and
// CAP_NET_RAW, permitted and effective, as setcap does.
func setFileCaps(p string) error {
	// struct vfs_cap_data, revision 2: magic_etc, then {permitted, inheritable} x2.
	const vfsCapRevision2, vfsCapFlagsEffective = 0x02000000, 0x1
	data := make([]byte, 20)
	binary.LittleEndian.PutUint32(data[0:], vfsCapRevision2|vfsCapFlagsEffective)
	binary.LittleEndian.PutUint32(data[4:], 1<<unix.CAP_SYS_ADMIN|1<<unix.CAP_NET_RAW)
	return unix.Setxattr(p, "security.capability", data, 0)
}
