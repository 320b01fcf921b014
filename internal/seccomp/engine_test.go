package seccomp

import (
	"slices"
	"testing"
)

// engineDenied is what Engine claims to refuse, written out again by hand
// so that a call dropped from engineRules fails TestEngineProfile instead of
// vanishing from both the profile and its test. The keyring calls fail with
// ENOSYS (crun takes only ENOSYS for "no keyrings"); everything else EPERM.
var engineDenied = map[string]Action{
	// kernel exploit primitives
	"bpf": EPERM, "perf_event_open": EPERM, "userfaultfd": EPERM,
	"io_uring_setup": EPERM, "io_uring_enter": EPERM, "io_uring_register": EPERM,
	// the whole system
	"kexec_load": EPERM, "kexec_file_load": EPERM,
	"init_module": EPERM, "finit_module": EPERM, "delete_module": EPERM,
	"reboot": EPERM, "swapon": EPERM, "swapoff": EPERM, "acct": EPERM, "syslog": EPERM,
	"lookup_dcookie": EPERM, "nfsservctl": EPERM, "uselib": EPERM,
	"settimeofday": EPERM, "clock_settime": EPERM, "clock_adjtime": EPERM, "adjtimex": EPERM,
	"iopl": EPERM, "ioperm": EPERM,
	// the kernel keyring is not namespaced
	"keyctl": enosys, "add_key": enosys, "request_key": enosys,
	// path-based confinement bypass (shocker), system-wide watches
	"name_to_handle_at": EPERM, "open_by_handle_at": EPERM, "fanotify_init": EPERM,
	// recurring kernel bugs
	"modify_ldt": EPERM, "vmsplice": EPERM, "remap_file_pages": EPERM, "memfd_secret": EPERM,
	// other processes' memory
	"process_vm_readv": EPERM, "process_vm_writev": EPERM, "kcmp": EPERM, "process_madvise": EPERM,
	// NUMA placement and page migration
	"mbind": EPERM, "set_mempolicy": EPERM, "set_mempolicy_home_node": EPERM,
	"migrate_pages": EPERM, "move_pages": EPERM,
}

// engineAllowed is what podman, conmon and crun do to start a container;
// Default refuses most of it, Engine must not.
var engineAllowed = []string{
	"mount", "umount2", "pivot_root", "unshare", "setns", "clone", "clone3",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "mount_setattr",
	"sethostname", "setdomainname", "chroot", "seccomp", "prctl", "capset",
	"setuid", "setgid", "setgroups", "mknodat", "ptrace",
	"read", "write", "openat", "execve", "futex", "getpid", "memfd_create", "pidfd_open",
}

// amd64OnlyCalls are calls of engineDenied or engineAllowed arm64 never had.
var amd64OnlyCalls = []string{"iopl", "ioperm", "modify_ldt", "uselib"}

func engineArches(name string) []Arch {
	if slices.Contains(amd64OnlyCalls, name) {
		return amd64Only
	}
	return bothArches
}

// TestEngineProfile runs the engine's compiled filter in the interpreter: every
// call engineDenied lists is refused with its errno on both architectures, what
// the engine needs to make containers is allowed, and the other ABIs of a
// machine (i386 and aarch32 compat, x32) are killed as under Default.
func TestEngineProfile(t *testing.T) {
	var rows []row
	for name, want := range engineDenied {
		rows = append(rows, row{name: name, arches: engineArches(name), want: want})
	}
	for _, name := range engineAllowed {
		rows = append(rows, row{name: name, arches: engineArches(name), want: Allow})
	}
	rows = append(rows,
		// A denial does not depend on the arguments: the exploit needs none.
		call("bpf", EPERM, 5, 0, 0), call("bpf", EPERM, hi1|5, ^uint64(0), 128),
		call("keyctl", enosys, 0, ^uint64(0)),
		call("perf_event_open", EPERM, 0, 0, ^uint64(0), ^uint64(0)),
		// A compat or x32 entry would not be numbered as the profile is.
		row{name: "bpf", arches: amd64Only, audit: auditI386, want: KillProcess},
		row{name: "getpid", arches: []Arch{ARM64}, audit: auditARM, want: KillProcess},
		row{nr: 0x40000000 | 321, arches: amd64Only, want: KillProcess}, // x32 bpf
		row{nr: 0x40000000 | 425, arches: amd64Only, want: KillProcess}, // x32 io_uring_setup
	)
	runRows(t, Engine(), rows)
}

// TestEngineProfileListed: engineDenied names exactly what Engine denies, so
// a rule added to the profile gets its row and a rule dropped fails above.
func TestEngineProfileListed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Engine().Rules {
		if len(r.Args) != 0 {
			t.Errorf("%v: the engine's rules deny whatever the arguments, this one has conditions", r.Names)
		}
		for _, name := range r.Names {
			if seen[name] {
				t.Errorf("%s is named twice", name)
			}
			seen[name] = true
			want, ok := engineDenied[name]
			if !ok {
				t.Errorf("Engine denies %s (%v) and engineDenied does not list it", name, r.Action)
			} else if r.Action != want {
				t.Errorf("Engine: %s = %v, engineDenied says %v", name, r.Action, want)
			}
			if r.Reason == "" {
				t.Errorf("%s has no reason", name)
			}
		}
	}
	for name := range engineDenied {
		if !seen[name] {
			t.Errorf("engineDenied lists %s and Engine does not deny it", name)
		}
	}
	if p := Engine(); p.DefaultAction != Allow {
		t.Errorf("Engine's default is %v: the engine needs mount and namespaces, which a deny-by-default list would have to name", p.DefaultAction)
	}
}
