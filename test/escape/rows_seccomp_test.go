package escape

import "time"

// seccompRows: the breadth of the seccomp filter (internal/seccomp, kept.go has
// what stays allowed and why). Each attempt is harmless and would succeed, or
// fail with another errno, if the filter let it through: only the filter
// answers EPERM. The ioctls are queries on the probe's own binary, a file on
// the host's filesystem.
var seccompRows = []row{
	// Kernel attack surface no agent needs.
	{name: "modify_ldt", args: probe("modify-ldt"), want: "DENIED EPERM"},
	{name: "kcmp", args: probe("kcmp"), want: "DENIED EPERM"},
	{name: "process_madvise", args: probe("process-madvise"), want: "DENIED EPERM"},
	{name: "remap_file_pages", args: probe("remap-file-pages"), want: "DENIED EPERM"},
	{name: "vmsplice", args: probe("vmsplice"), want: "DENIED EPERM"},
	{name: "memfd_secret", args: probe("memfd-secret"), want: "DENIED EPERM"},
	{name: "listns", args: probe("listns"), want: "DENIED EPERM"},
	// CVE-2017-11176: mq_notify's use-after-free, reached by any process.
	{name: "mq_open", args: probe("mq-open"), want: "DENIED EPERM"},
	// NUMA: Docker allows the policy calls only with CAP_SYS_NICE.
	{name: "numa_mbind", args: probe("numa", "mbind"), want: "DENIED EPERM"},
	{name: "numa_set_mempolicy", args: probe("numa", "set_mempolicy"), want: "DENIED EPERM"},
	{name: "numa_get_mempolicy", args: probe("numa", "get_mempolicy"), want: "DENIED EPERM"},
	{name: "numa_move_pages", args: probe("numa", "move_pages"), want: "DENIED EPERM"},
	{name: "numa_migrate_pages", args: probe("numa", "migrate_pages"), want: "DENIED EPERM"},
	// Filesystem and block administration by ioctl. FIEMAP shows where a file
	// lies on the disk; the others reach code ordinary tools never run.
	{name: "ioctl_fiemap", args: probe("fiemap", "{probe}"), want: "DENIED EPERM"},
	{name: "ioctl_loop_get_status64", args: probe("ioctl", "{probe}", "0x4c05"), want: "DENIED EPERM"},
	{name: "ioctl_loop_high_bits", args: probe("ioctl-hibits", "{probe}", "0x4c05"), want: "DENIED EPERM"},
	{name: "ioctl_btrfs_fs_info", args: probe("ioctl", "{probe}", "0x8400941f"), want: "DENIED EPERM"},
	{name: "ioctl_dm_version", args: probe("ioctl", "{probe}", "0xc138fd00"), want: "DENIED EPERM"},
	{name: "ioctl_blkgetsize64", args: probe("ioctl", "{probe}", "0x80081272"), want: "DENIED EPERM"},
	{name: "ioctl_fscrypt_get_policy", args: probe("ioctl", "{probe}", "0x400c6615"), want: "DENIED EPERM"},
	{name: "ioctl_fsverity_measure", args: probe("ioctl", "{probe}", "0xc0046686"), want: "DENIED EPERM"},
	{name: "ioctl_fs_getfsmap", args: probe("ioctl", "{probe}", "0xc0c0583b"), want: "DENIED EPERM"},
	{name: "ioctl_ext4_getstate", args: probe("ioctl", "{probe}", "0x40046629"), want: "DENIED EPERM"},
	{name: "ioctl_ext4_getstate_high_bits", args: probe("ioctl-hibits", "{probe}", "0x40046629"), want: "DENIED EPERM"},
	// CVE-2022-0995: an out-of-bounds write in a notification pipe's filter.
	{name: "ioctl_watch_queue", args: probe("watch-queue"), want: "DENIED EPERM"},
	// The AF_UNIX out-of-band use-after-free class (CVE-2025-38236).
	{name: "send_oob_unix", args: probe("send-oob", "unix"), want: "DENIED EPERM"},
	{name: "send_oob_tcp", args: probe("send-oob", "tcp"), want: "DENIED EPERM"},

	// What stays: the inode-flag ioctls lsattr and chattr use, cp --reflink=auto
	// (FICLONE, falling back to a copy), and the toolchains' runtimes.
	{name: "work_ioctl_getflags", args: probe("ioctl", "{probe}", "0x80086601"), want: "OK"},
	{name: "work_ioctl_fsgetxattr", args: probe("ioctl", "{probe}", "0x801c581f"), want: "OK"},
	{name: "work_lsattr", args: sh("cd {work} && echo x >f && lsattr f >/dev/null && echo OK"), want: "OK"},
	{name: "work_cp_reflink", args: sh("cd {work} && echo OK >a && cp --reflink=auto a b && cat b"), want: "OK"},
	{name: "work_node", args: sh("node -e 'console.log(\"OK\")'"), want: "OK"},
	// The JVM asks libnuma, which takes the refusal for "no NUMA".
	{name: "work_java_numa", timeout: 60 * time.Second,
		args: sh("java -XX:+UseNUMA -version >/dev/null 2>&1 && echo OK"), want: "OK"},
	{name: "work_python_multiprocessing",
		args: sh("python3 -c 'import multiprocessing as m; print(\"OK\" if m.Pool(2).map(abs, [-1]) == [1] else \"NO\")'"),
		want: "OK"},
}
