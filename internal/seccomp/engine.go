package seccomp

// Engine returns the profile of a sandbox's container engine (podman's API
// service, conmon, crun and every container they start, which inherit it):
// the engine mounts, pivots, makes user, mount and network namespaces and
// joins them, so none of that is denied, as Default would. What it refuses
// is what neither the engine nor a container it starts needs and what
// kernel exploits keep starting from; it is the floor under a container's
// own filters, and the only filter on what runs in the engine's context
// outside a container's wrapper.
//
// The keyring calls fail with ENOSYS, not EPERM: crun gives each container
// a session keyring of its own and takes ENOSYS, and only ENOSYS, for a
// kernel without keyrings.
func Engine() Profile {
	return Profile{DefaultAction: Allow, Rules: engineRules()}
}

func engineRules() []Rule {
	return []Rule{
		{Names: []string{"bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd"},
			Action: EPERM, Reason: "kernel exploit primitive"},
		{Names: []string{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
			"reboot", "swapon", "swapoff", "acct", "syslog", "lookup_dcookie", "nfsservctl", "uselib"},
			Action: EPERM, Reason: "administers the whole system"},
		{Names: []string{"keyctl", "add_key", "request_key"},
			Action: Errno(linuxENOSYS), Reason: "the kernel keyring is not namespaced; crun does without one on ENOSYS"},
		{Names: []string{"iopl", "ioperm"},
			Action: EPERM, Reason: "direct hardware port access"},
		{Names: []string{"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"},
			Action: EPERM, Reason: "sets the system clock"},
		{Names: []string{"name_to_handle_at", "open_by_handle_at"},
			Action: EPERM, Reason: "file handles bypass path-based confinement (the 2014 shocker escape)"},
		{Names: []string{"fanotify_init"},
			Action: EPERM, Reason: "watches and intercepts file access system-wide"},
		{Names: []string{"modify_ldt", "vmsplice", "remap_file_pages", "memfd_secret"},
			Action: EPERM, Reason: "recurring kernel bugs, and nothing an engine or a container build needs"},
		{Names: []string{"process_vm_readv", "process_vm_writev", "kcmp", "process_madvise"},
			Action: EPERM, Reason: "reads, compares or acts on another process's memory"},
		{Names: []string{"mbind", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages", "move_pages"},
			Action: EPERM, Reason: "NUMA placement and page migration"},
	}
}
