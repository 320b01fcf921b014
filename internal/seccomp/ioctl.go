package seccomp

// An ioctl command is an unsigned int laid out as direction (2 bits), size of
// the argument (14), type (8) and number (8) (include/uapi/asm-generic/ioctl.h).
// The type byte names the subsystem (Documentation/userspace-api/ioctl/
// ioctl-number.rst), and the handlers compare the whole word. The rules
// compare only the low 32 bits of the register: the kernel drops the high
// half, so TIOCSTI|1<<32 is TIOCSTI, and the filter must agree.
const (
	cmdExact = 0xffffffff // the whole command word
	cmdType  = 0x0000ff00 // the type byte, whatever the number, direction and size

	// include/uapi/asm-generic/ioctls.h and sockios.h.
	tiocSTI    = 0x5412
	tiocLinux  = 0x541c
	tiocSetD   = 0x5423
	siocAtMark = 0x8905

	// include/uapi/linux/fs.h. FICLONE and FICLONERANGE share extents
	// (cp --reflink, package managers); they borrowed btrfs's type byte.
	// FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR read and set inode flags and
	// project ids (lsattr, chattr -p); they borrowed XFS's.
	fiClone         = 0x40049409
	fiCloneRange    = 0x4020940d
	fsIocFSGetXattr = 0x801c581f
	fsIocFSSetXattr = 0x401c5820

	// include/uapi/linux/ext4.h: EXT4_IOC_SWAP_BOOT, _IO('f', 17). procfs's
	// PROCMAP_QUERY (6.11) is 'f' 17 too, with a size, so only the exact
	// word is denied.
	ext4SwapBoot = 0x00006611

	// include/uapi/linux/watch_queue.h.
	watchQueueSetSize   = 0x5760
	watchQueueSetFilter = 0x5761
)

// ioctlRule is one line of the ioctl table: the command words cmd&mask ==
// value get action.
type ioctlRule struct {
	mask, value uint32
	action      Action
	reason      string
}

// exactly matches one command word.
func exactly(cmd uint32, action Action, reason string) []ioctlRule {
	return []ioctlRule{{mask: cmdExact, value: cmd, action: action, reason: reason}}
}

// numbers denies the commands first..last of type typ, whatever their
// direction and size: a word with the right type and number but another size
// is no command at all, so denying it costs nothing, and the rule does not
// depend on the size of a structure. The range becomes the fewest aligned
// blocks, one rule each.
func numbers(typ uint8, first, last int, reason string) []ioctlRule {
	var rules []ioctlRule
	for lo := first; lo <= last; {
		size := 1
		for lo%(2*size) == 0 && lo+2*size-1 <= last {
			size *= 2
		}
		rules = append(rules, ioctlRule{
			mask:   cmdType | uint32(0xff&^(size-1)),
			value:  uint32(typ)<<8 | uint32(lo),
			action: EPERM, reason: reason,
		})
		lo += size
	}
	return rules
}

// everyNumber denies every command of type typ.
func everyNumber(typ uint8, reason string) []ioctlRule { return numbers(typ, 0, 0xff, reason) }

// ioctlTable is every ioctl rule in the order the filter tries them; an
// allowed command comes before the rule that denies the rest of its type.
//
// Filesystem and block administration: an agent edits files, it does not
// administer the filesystem under them. Most of these need a capability the
// sandbox does not have, but some do not (btrfs snapshots of one's own
// subvolume, ext4 MOVE_EXT, fscrypt keys, fsverity, XFS swapext), and all of
// them parse input in code that ordinary tools never reach.
func ioctlTable() [][]ioctlRule {
	return [][]ioctlRule{
		exactly(tiocSTI, EPERM, "TIOCSTI types into the terminal of the user who started the agent"),
		exactly(tiocLinux, EPERM, "TIOCLINUX reads and injects on the Linux console"),
		exactly(tiocSetD, EPERM, "TIOCSETD loads rarely used line disciplines (kernel attack surface)"),
		exactly(siocAtMark, EPERM, "SIOCATMARK belongs to the out-of-band data path denied below"),
		// CVE-2022-0995: an out-of-bounds write in the filter of a
		// notification pipe. Nothing can post to one here (keyctl is denied).
		exactly(watchQueueSetSize, EPERM, "notification pipes: nothing posts to them here"),
		exactly(watchQueueSetFilter, EPERM, "notification pipes: the filter was an out-of-bounds write"),

		exactly(fiClone, Allow, "FICLONE: cp --reflink and package managers share extents, checked like a write"),
		exactly(fiCloneRange, Allow, "FICLONERANGE: FICLONE for a range"),
		everyNumber(0x94, "btrfs: subvolumes, snapshots, send, balance, tree search; FIDEDUPERANGE"),
		everyNumber(0xfd, "device-mapper: creates and reloads block devices"),
		everyNumber('L', "loop devices: attach files as block devices"),
		everyNumber(0x12, "block devices: discard, zero-out, partitions, read-only, tracing"),
		everyNumber(0xf5, "f2fs: garbage collection, resize, atomic writes"),
		everyNumber('n', "nilfs2: checkpoints, segment cleaning, resize"),
		everyNumber(0xbc, "bcachefs: devices, subvolumes"),
		everyNumber(0xcd, "reiserfs (removed in Linux 6.13)"),
		everyNumber(0xe5, "/dev/fuse: cloning and backing files of FUSE servers"),

		exactly(fsIocFSGetXattr, Allow, "FS_IOC_FSGETXATTR: lsattr reads inode flags"),
		exactly(fsIocFSSetXattr, Allow, "FS_IOC_FSSETXATTR: chattr; the flags that matter need capabilities"),
		everyNumber('X', "XFS and generic: freeze, trim, shutdown, GETFSMAP, bulkstat, swapext, geometry"),

		// 'f' is shared: the generic inode flags (1, 2) stay.
		numbers('f', 7, 16, "ext4 resize, migrate, MOVE_EXT; FS_IOC_FIEMAP (11) shows physical block layout"),
		exactly(ext4SwapBoot, EPERM, "EXT4_IOC_SWAP_BOOT replaces the boot loader inode"),
		numbers('f', 18, 27, "ext4 PRECACHE_EXTENTS; fscrypt (19-27): policies, keys, salts"),
		numbers('f', 40, 47, "ext4 extent cache, state, checkpoint, filesystem UUID"),
		numbers('f', 0x84, 0x87, "fsverity: enable (irreversible), measure, read metadata"),
	}
}

// ioctlRules turns ioctlTable into rules on ioctl's command argument.
func ioctlRules() []Rule {
	var rules []Rule
	for _, line := range ioctlTable() {
		for _, r := range line {
			m := ArgMatch{Index: 1, Width: Word32, Op: Equal, Value: uint64(r.value)}
			if r.mask != cmdExact {
				m.Op, m.Mask = MaskedEqual, uint64(r.mask)
			}
			rules = append(rules, Rule{Names: []string{"ioctl"}, Args: []ArgMatch{m}, Action: r.action, Reason: r.reason})
		}
	}
	return rules
}
