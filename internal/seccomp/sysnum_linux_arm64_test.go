package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestARM64Numbers checks the arm64 table, which every build uses, against
// x/sys/unix, which has only the numbers of the arch it is built for.
func TestARM64Numbers(t *testing.T) {
	want := map[string]uint32{
		"lookup_dcookie":          unix.SYS_LOOKUP_DCOOKIE,
		"ioctl":                   unix.SYS_IOCTL,
		"mknodat":                 unix.SYS_MKNODAT,
		"umount2":                 unix.SYS_UMOUNT2,
		"mount":                   unix.SYS_MOUNT,
		"pivot_root":              unix.SYS_PIVOT_ROOT,
		"nfsservctl":              unix.SYS_NFSSERVCTL,
		"chroot":                  unix.SYS_CHROOT,
		"vhangup":                 unix.SYS_VHANGUP,
		"quotactl":                unix.SYS_QUOTACTL,
		"acct":                    unix.SYS_ACCT,
		"personality":             unix.SYS_PERSONALITY,
		"unshare":                 unix.SYS_UNSHARE,
		"kexec_load":              unix.SYS_KEXEC_LOAD,
		"init_module":             unix.SYS_INIT_MODULE,
		"delete_module":           unix.SYS_DELETE_MODULE,
		"clock_settime":           unix.SYS_CLOCK_SETTIME,
		"syslog":                  unix.SYS_SYSLOG,
		"ptrace":                  unix.SYS_PTRACE,
		"reboot":                  unix.SYS_REBOOT,
		"sethostname":             unix.SYS_SETHOSTNAME,
		"setdomainname":           unix.SYS_SETDOMAINNAME,
		"prctl":                   unix.SYS_PRCTL,
		"settimeofday":            unix.SYS_SETTIMEOFDAY,
		"adjtimex":                unix.SYS_ADJTIMEX,
		"socket":                  unix.SYS_SOCKET,
		"socketpair":              unix.SYS_SOCKETPAIR,
		"sendto":                  unix.SYS_SENDTO,
		"recvfrom":                unix.SYS_RECVFROM,
		"sendmsg":                 unix.SYS_SENDMSG,
		"recvmsg":                 unix.SYS_RECVMSG,
		"add_key":                 unix.SYS_ADD_KEY,
		"request_key":             unix.SYS_REQUEST_KEY,
		"keyctl":                  unix.SYS_KEYCTL,
		"clone":                   unix.SYS_CLONE,
		"swapon":                  unix.SYS_SWAPON,
		"swapoff":                 unix.SYS_SWAPOFF,
		"perf_event_open":         unix.SYS_PERF_EVENT_OPEN,
		"recvmmsg":                unix.SYS_RECVMMSG,
		"fanotify_init":           unix.SYS_FANOTIFY_INIT,
		"name_to_handle_at":       unix.SYS_NAME_TO_HANDLE_AT,
		"open_by_handle_at":       unix.SYS_OPEN_BY_HANDLE_AT,
		"clock_adjtime":           unix.SYS_CLOCK_ADJTIME,
		"setns":                   unix.SYS_SETNS,
		"sendmmsg":                unix.SYS_SENDMMSG,
		"process_vm_readv":        unix.SYS_PROCESS_VM_READV,
		"process_vm_writev":       unix.SYS_PROCESS_VM_WRITEV,
		"finit_module":            unix.SYS_FINIT_MODULE,
		"bpf":                     unix.SYS_BPF,
		"userfaultfd":             unix.SYS_USERFAULTFD,
		"kexec_file_load":         unix.SYS_KEXEC_FILE_LOAD,
		"io_uring_setup":          unix.SYS_IO_URING_SETUP,
		"io_uring_enter":          unix.SYS_IO_URING_ENTER,
		"io_uring_register":       unix.SYS_IO_URING_REGISTER,
		"open_tree":               unix.SYS_OPEN_TREE,
		"move_mount":              unix.SYS_MOVE_MOUNT,
		"fsopen":                  unix.SYS_FSOPEN,
		"fsconfig":                unix.SYS_FSCONFIG,
		"fsmount":                 unix.SYS_FSMOUNT,
		"fspick":                  unix.SYS_FSPICK,
		"clone3":                  unix.SYS_CLONE3,
		"pidfd_getfd":             unix.SYS_PIDFD_GETFD,
		"mount_setattr":           unix.SYS_MOUNT_SETATTR,
		"quotactl_fd":             unix.SYS_QUOTACTL_FD,
		"statmount":               unix.SYS_STATMOUNT,
		"listmount":               unix.SYS_LISTMOUNT,
		"open_tree_attr":          unix.SYS_OPEN_TREE_ATTR,
		"kcmp":                    unix.SYS_KCMP,
		"process_madvise":         unix.SYS_PROCESS_MADVISE,
		"remap_file_pages":        unix.SYS_REMAP_FILE_PAGES,
		"memfd_secret":            unix.SYS_MEMFD_SECRET,
		"mbind":                   unix.SYS_MBIND,
		"set_mempolicy":           unix.SYS_SET_MEMPOLICY,
		"get_mempolicy":           unix.SYS_GET_MEMPOLICY,
		"set_mempolicy_home_node": unix.SYS_SET_MEMPOLICY_HOME_NODE,
		"migrate_pages":           unix.SYS_MIGRATE_PAGES,
		"move_pages":              unix.SYS_MOVE_PAGES,
		"mq_open":                 unix.SYS_MQ_OPEN,
		"mq_unlink":               unix.SYS_MQ_UNLINK,
		"mq_timedsend":            unix.SYS_MQ_TIMEDSEND,
		"mq_timedreceive":         unix.SYS_MQ_TIMEDRECEIVE,
		"mq_notify":               unix.SYS_MQ_NOTIFY,
		"mq_getsetattr":           unix.SYS_MQ_GETSETATTR,
		"listns":                  unix.SYS_LISTNS,
		"vmsplice":                unix.SYS_VMSPLICE,
	}
	checkNumbers(t, ARM64, want)

	extra := map[string]uint32{"read": unix.SYS_READ, "write": unix.SYS_WRITE, "mmap": unix.SYS_MMAP,
		"getpid": unix.SYS_GETPID, "execve": unix.SYS_EXECVE, "futex": unix.SYS_FUTEX, "openat": unix.SYS_OPENAT,
		"splice": unix.SYS_SPLICE, "tee": unix.SYS_TEE, "memfd_create": unix.SYS_MEMFD_CREATE,
		"pidfd_open": unix.SYS_PIDFD_OPEN, "execveat": unix.SYS_EXECVEAT, "shmget": unix.SYS_SHMGET,
		"fanotify_mark": unix.SYS_FANOTIFY_MARK, "seccomp": unix.SYS_SECCOMP}
	for name, nr := range extra {
		if got := extraNumbers[ARM64][name]; got != nr {
			t.Errorf("test number of %s = %d, unix.SYS_* says %d", name, got, nr)
		}
	}
}
