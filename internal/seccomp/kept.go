package seccomp

// keptAllowed is what Default allows although Docker's default profile
// (to a container without capabilities) or clampdown's workload profile
// refuses it, each with what an agent's toolchains (gcc, go, node, python,
// git, cargo, java and what they run) need it for. A test holds the two
// profiles' lists and fails when a call either refuses is neither denied
// here nor kept, so a new entry there forces a decision here.
//
// Calls that exist only in 32-bit ABIs (socketcall, stime, vm86, ...) need
// no entry: the architecture check kills every call made through those ABIs.
func keptAllowed() []Kept {
	return []Kept{
		{Names: []string{"_sysctl", "afs_syscall", "create_module", "get_kernel_syms", "getpmsg", "putpmsg",
			"query_module", "security", "tuxcall", "vserver"},
			Reason: "no kernel stockade runs on implements them (Landlock ABI 3 means Linux 6.2 or later): they fail with ENOSYS"},
		{Names: []string{"shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
			"msgget", "msgsnd", "msgrcv", "msgctl"},
			Reason: "SysV IPC: PostgreSQL's shared memory and test suites use it; the sandbox's own IPC namespace holds every object it can reach"},
		{Names: []string{"splice", "tee"},
			Reason: "Go's io.Copy between sockets, files and pipes uses splice; Dirty Pipe (CVE-2022-0847) is fixed in every kernel stockade runs on"},
		{Names: []string{"memfd_create"},
			Reason: "Chromium (Playwright, Puppeteer), JIT runtimes and Python's os.memfd_create; running one gives nothing the writable, executable workdir does not"},
		{Names: []string{"pidfd_open"},
			Reason: "Go's os/exec waits on children through it (Go 1.23+); it reaches only processes the sandbox's PID namespace shows, and pidfd_getfd is denied"},
		{Names: []string{"execveat"},
			Reason: "fexecve and libc spawn paths; Landlock checks the file's execute right as it does for execve"},
		{Names: []string{"fanotify_mark"},
			Reason: "does nothing without an fd from fanotify_init, which is denied"},
		{Names: []string{"futex_wait", "futex_wake", "futex_requeue", "futex_waitv"},
			Reason: "futex2 (Wine, newer runtimes): the same code as futex, which every threaded program uses"},
		{Names: []string{"cachestat"},
			Reason: "page-cache state of a file the caller can open, as mincore gives; Docker allows it"},
		{Names: []string{"io_pgetevents"},
			Reason: "Linux AIO, which databases use through libaio; io_setup and io_submit are allowed by Docker and here"},
		{Names: []string{"map_shadow_stack"},
			Reason: "shadow stacks (x86 CET, arm64 GCS): glibc allocates them for every thread once enabled, so refusing would break all programs"},
		{Names: []string{"seccomp"},
			Reason: "a new filter can only narrow what a process may do; Chromium's sandbox and bubblewrap-based tools install their own"},
		{Names: []string{"file_getattr", "file_setattr"},
			Reason: "the path form (Linux 6.17) of FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR, which stay allowed; newer than Docker's list"},
		{Names: []string{"lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr"},
			Reason: "the caller's own LSM attributes, as /proc/self/attr has them; the LSM decides what a change may do"},
		{Names: []string{"rseq_slice_yield"},
			Reason: "a thread's own scheduler hint for restartable sequences; newer than Docker's list"},
		{Names: []string{"uprobe"},
			Reason: "only the kernel's uprobe trampoline calls it, as for uretprobe (which Docker allows); denying it would crash a process a host tracer probes"},
		{Names: []string{"mmap"}, Use: "MAP_GROWSDOWN",
			Reason: "clampdown refuses it for StackRot (CVE-2023-3269), but every main stack grows down anyway; a rule on mmap would take the most frequent call off the kernel's allow cache"},
		{Names: []string{"personality"}, Use: "PER_LINUX and the query 0xffffffff",
			Reason: "they change nothing (ASLR and NX stay on); every other persona is denied"},
	}
}
