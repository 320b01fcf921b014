package seccomp

import (
	"slices"
	"strings"
	"testing"
)

func TestDefaultValidates(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultCoversBaseline guards the baseline of docs/sandbox.md ("seccomp"): a
// call may leave this list only by a deliberate edit here.
func TestDefaultCoversBaseline(t *testing.T) {
	baseline := []string{
		"mount", "umount2", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
		"mount_setattr", "listmount", "statmount", "pivot_root", "chroot", "setns", "unshare", "clone",
		"clone3", "bpf", "perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev",
		"pidfd_getfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "keyctl",
		"add_key", "request_key", "personality", "ioctl", "sendto", "recvfrom", "sendmsg", "recvmsg",
		"socket", "socketpair", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "reboot",
		"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "lookup_dcookie", "name_to_handle_at",
		"open_by_handle_at", "iopl", "ioperm", "vhangup", "syslog", "nfsservctl", "uselib", "ustat",
		"sysfs", "fanotify_init", "sethostname", "setdomainname", "mknod", "mknodat", "prctl",
		"modify_ldt", "kcmp", "process_madvise", "remap_file_pages", "memfd_secret", "vmsplice", "listns",
		"mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node", "migrate_pages", "move_pages",
		"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
		"sendmmsg", "recvmmsg",
	}
	names := Default().Names()
	for _, name := range baseline {
		if _, found := slices.BinarySearch(names, name); !found {
			t.Errorf("Default() has no rule for %s", name)
		}
	}
}

// TestArchTables checks the number tables against the profile: every name
// Default uses has a number on each arch or is listed as absent there (never
// both), and no two names share a number. The tables hold every call of
// their arch, for allowlists; the sysnum tests compare them with x/sys/unix.
func TestArchTables(t *testing.T) {
	used := Default().Names()
	for _, arch := range Arches() {
		info := arches[arch]
		for _, name := range used {
			_, has := info.lookup(name)
			if absent := info.isAbsent(name); has == absent {
				t.Errorf("%v: %s: has a number = %v, listed absent = %v; want exactly one", arch, name, has, absent)
			}
		}
		byNr := make(map[uint32]string)
		for name, nr := range info.numbers() {
			if other, dup := byNr[nr]; dup {
				t.Errorf("%v: %s and %s share number %d", arch, name, other, nr)
			}
			byNr[nr] = name
		}
		if info.auditArch&0x80000000 == 0 || info.auditArch&0x40000000 == 0 {
			t.Errorf("%v: audit arch %#x is not marked 64-bit little-endian", arch, info.auditArch)
		}
	}
}

func TestDefaultIsFresh(t *testing.T) {
	a := Default()
	a.Rules[0].Names[0] = "getpid"
	a.Rules = a.Rules[:1]
	if b := Default(); b.Rules[0].Names[0] != "mount" || b.Len() <= 1 {
		t.Error("changing one Default() changed the next")
	}
}

func TestLenAndNames(t *testing.T) {
	p := Profile{DefaultAction: Allow, Rules: []Rule{
		{Names: []string{"mount", "bpf"}, Action: EPERM},
		{Names: []string{"ioctl"}, Args: []ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: 1}}, Action: EPERM},
		{Names: []string{"ioctl"}, Args: []ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: 2}}, Action: EPERM},
	}}
	if got := p.Len(); got != 4 {
		t.Errorf("Len() = %d, want 4", got)
	}
	if got, want := p.Names(), []string{"bpf", "ioctl", "mount"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if d := Default(); d.Len() < len(d.Names()) || d.Len() < 80 {
		t.Errorf("Default(): Len() = %d for %d names", d.Len(), len(d.Names()))
	}
}

func TestValidateRejects(t *testing.T) {
	arg := func(m ArgMatch) Rule { return Rule{Names: []string{"ioctl"}, Args: []ArgMatch{m}, Action: EPERM} }
	tests := []struct {
		desc    string
		rules   []Rule
		def     Action
		wantErr string
	}{
		{"unknown call", []Rule{{Names: []string{"mount", "mountt"}, Action: EPERM}}, Allow, `"mountt"`},
		{"no names", []Rule{{Action: EPERM}}, Allow, "names no system call"},
		{"bad action", []Rule{{Names: []string{"bpf"}, Action: 0x7ff00000}}, Allow, "not supported"},
		{"bad default", nil, 0x30000, "default action"},
		{"index 6", []Rule{arg(ArgMatch{Index: 6, Width: Word32, Op: Equal})}, Allow, "out of range"},
		{"no width", []Rule{arg(ArgMatch{Index: 1, Op: Equal, Value: 1})}, Allow, "width 0"},
		{"no op", []Rule{arg(ArgMatch{Index: 1, Width: Word32, Value: 1})}, Allow, "unknown comparison"},
		{"too wide", []Rule{arg(ArgMatch{Index: 1, Width: Word32, Op: Equal, Value: 1 << 32})}, Allow, "does not fit"},
		{"empty mask", []Rule{arg(ArgMatch{Index: 1, Width: Word32, Op: MaskedAny})}, Allow, "empty mask"},
		{"value outside mask", []Rule{arg(ArgMatch{Index: 1, Width: Word32, Op: MaskedEqual, Mask: 0xf0, Value: 0x1})}, Allow, "outside the mask"},
		{"stray mask", []Rule{arg(ArgMatch{Index: 1, Width: Word32, Op: Equal, Mask: 0xf0})}, Allow, "only used by MaskedEqual"},
		{"shadowed", []Rule{{Names: []string{"ioctl"}, Action: EPERM}, arg(ArgMatch{Index: 1, Width: Word32, Op: Equal, Value: 1})}, Allow, "never applies"},
		{"same call twice", []Rule{{Names: []string{"bpf"}, Action: EPERM}, {Names: []string{"bpf"}, Action: KillProcess}}, Allow, "never applies"},
		{"duplicate", []Rule{arg(ArgMatch{Index: 1, Width: Word32, Op: Equal, Value: 1}), arg(ArgMatch{Index: 1, Width: Word32, Op: Equal, Value: 1})}, Allow, "duplicate"},
	}
	for _, tt := range tests {
		err := Profile{DefaultAction: tt.def, Rules: tt.rules}.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.desc, err, tt.wantErr)
		}
	}
	bpf := []Rule{{Names: []string{"bpf"}, Action: EPERM}}
	kept := []struct {
		desc    string
		kept    Kept
		wantErr string
	}{
		{"kept and denied", Kept{Names: []string{"bpf"}, Reason: "x"}, "a rule names it"},
		{"no reason", Kept{Names: []string{"splice"}}, "needs names and a reason"},
		{"no names", Kept{Reason: "x"}, "needs names and a reason"},
	}
	for _, tt := range kept {
		err := Profile{DefaultAction: Allow, Rules: bpf, Kept: []Kept{tt.kept}}.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.desc, err, tt.wantErr)
		}
	}
}

func TestValidateKeptUse(t *testing.T) {
	p := Profile{DefaultAction: Allow,
		Rules: []Rule{{Names: []string{"personality"}, Action: EPERM,
			Args: []ArgMatch{{Index: 0, Width: Word32, Op: NotEqual, Value: perLinux}}}},
		Kept: []Kept{{Names: []string{"personality"}, Use: "PER_LINUX", Reason: "x"}}}
	if err := p.Validate(); err != nil {
		t.Errorf("a kept use of a call with rules: %v", err)
	}
}

func TestActionString(t *testing.T) {
	tests := []struct {
		a    Action
		want string
	}{
		{Allow, "allow"}, {KillProcess, "kill-process"}, {EPERM, "errno(EPERM)"},
		{Errno(linuxENOSYS), "errno(ENOSYS)"}, {Errno(13), "errno(13)"}, {0x7ff00000, "action(0x7ff00000)"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("Action(%#x).String() = %q, want %q", uint32(tt.a), got, tt.want)
		}
	}
	if e, ok := EPERM.Errno(); !ok || e != linuxEPERM {
		t.Errorf("EPERM.Errno() = %v, %v", e, ok)
	}
	if _, ok := Allow.Errno(); ok {
		t.Error("Allow.Errno() reports an errno")
	}
}
