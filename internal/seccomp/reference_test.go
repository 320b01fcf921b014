package seccomp

import (
	"slices"
	"testing"
)

// dockerRefuses are the calls on amd64 or arm64 that Docker's default profile
// (github.com/moby/profiles seccomp/default.json, May 2026) refuses to a
// container without capabilities: every call outside its allow-list, and those
// it allows only with a capability.
var dockerRefuses = []string{
	"_sysctl", "acct", "add_key", "afs_syscall", "bpf", "chroot", "clock_settime", "create_module",
	"delete_module", "fanotify_init", "file_getattr", "file_setattr", "finit_module", "fsconfig", "fsmount",
	"fsopen", "fspick", "get_kernel_syms", "get_mempolicy", "getpmsg", "init_module", "io_uring_enter",
	"io_uring_register", "io_uring_setup", "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load",
	"keyctl", "listns", "lookup_dcookie", "lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr",
	"mbind", "migrate_pages", "mount", "mount_setattr", "move_mount", "move_pages", "nfsservctl",
	"open_by_handle_at", "open_tree", "open_tree_attr", "perf_event_open", "pidfd_getfd", "pivot_root",
	"process_madvise", "putpmsg", "query_module", "quotactl", "quotactl_fd", "reboot", "request_key",
	"rseq_slice_yield", "security", "set_mempolicy", "set_mempolicy_home_node", "setdomainname",
	"sethostname", "setns", "settimeofday", "swapoff", "swapon", "sysfs", "syslog", "tuxcall", "umount2",
	"unshare", "uprobe", "uselib", "userfaultfd", "ustat", "vhangup", "vserver",
}

// clampdownRefuses are the calls on amd64 or arm64 that clampdown's workload
// profile (github.com/89luca89/clampdown seccomp_agent.json, for the agent and
// its tool containers) refuses whatever their arguments. It also filters arguments of clone, unshare, mknod, mknodat,
// socket, ioctl, mmap, prctl and the send and receive calls; Default filters
// the same or more, except mmap (see kept.go).
var clampdownRefuses = []string{
	"_sysctl", "acct", "add_key", "adjtimex", "bpf", "cachestat", "chroot", "clock_adjtime", "clock_settime",
	"clone3", "create_module", "delete_module", "execveat", "fanotify_init", "fanotify_mark", "finit_module",
	"fsconfig", "fsmount", "fsopen", "fspick", "futex_requeue", "futex_wait", "futex_waitv", "futex_wake",
	"get_kernel_syms", "init_module", "io_pgetevents", "io_uring_enter", "io_uring_register", "io_uring_setup",
	"ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load", "keyctl", "listmount", "lookup_dcookie",
	"map_shadow_stack", "memfd_create", "migrate_pages", "modify_ldt", "mount", "mount_setattr", "move_mount",
	"move_pages", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink",
	"msgctl", "msgget", "msgrcv", "msgsnd", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
	"open_tree", "perf_event_open", "personality", "pidfd_getfd", "pidfd_open", "pivot_root",
	"process_madvise", "process_vm_readv", "process_vm_writev", "ptrace", "query_module", "quotactl",
	"quotactl_fd", "reboot", "remap_file_pages", "request_key", "seccomp", "semctl", "semget", "semop",
	"semtimedop", "setdomainname", "sethostname", "setns", "settimeofday", "shmat", "shmctl", "shmdt",
	"shmget", "splice", "statmount", "swapoff", "swapon", "sysfs", "syslog", "tee", "umount2", "uselib",
	"userfaultfd", "ustat", "vhangup", "vmsplice",
}

// TestComparedWithReferences checks that every call Docker's default or
// clampdown's workload profile refuses is either named by a rule of Default
// or kept with a reason, and that Kept holds nothing else.
func TestComparedWithReferences(t *testing.T) {
	p := Default()
	named := p.Names()
	refused := slices.Concat(dockerRefuses, clampdownRefuses)
	kept := make(map[string]bool)
	for _, k := range p.Kept {
		for _, name := range k.Names {
			if kept[name] && k.Use == "" {
				t.Errorf("%s is kept twice", name)
			}
			kept[name] = true
			if _, ruled := slices.BinarySearch(named, name); k.Use == "" && (ruled || !slices.Contains(refused, name)) {
				t.Errorf("%s is kept, but a rule names it or no reference profile refuses it", name)
			}
		}
	}
	for _, name := range refused {
		if _, ruled := slices.BinarySearch(named, name); !ruled && !kept[name] {
			t.Errorf("%s: a reference profile refuses it; deny it in Default or say in kept.go why an agent needs it", name)
		}
	}
}
