package escape

// The rows of the battery a container leaves out, or answers otherwise,
// each with its reason (TestBatteryInContainer).

// flagNotInContainer says why the rows of a flag are left out.
var flagNotInContainer = map[string]string{
	"--ssh":          "it checks a socket stockade puts in the sandbox's /run/stockade, which a container does not see",
	"--gh":           "it checks a socket stockade puts in the sandbox's /run/stockade, which a container does not see",
	"--containers":   "it checks the sandbox's /run/stockade (the denials file), which a container does not see",
	"--ro":           "it checks a tree outside the workdir, which a container cannot bind (containers_bind_root, containers_bind_home)",
	"--rw":           "it checks a tree outside the workdir, which a container cannot bind (containers_bind_root, containers_bind_home)",
	"--slurm":        "it checks the Slurm chaperon on the sandbox's loopback, which a container cannot reach (containers_pod_agent_proxy)",
	"--gitconfig":    "it checks the sandbox HOME, which is not in a container (containers_bind_home)",
	"--shared-home":  "it checks the sandbox HOME, which is not in a container (containers_bind_home)",
	"--workdir":      "it checks the sandbox HOME, which is not in a container (containers_bind_home)",
	"--env":          "it checks a loosening of the command's own environment; a container's environment is the engine's",
	"--unmask":       "it checks a loosening that would loosen every row of the shared sandbox",
	"--allow-hooks":  "it checks a loosening that would loosen every row of the shared sandbox",
	"--agent-policy": "it checks the agent's egress policy; a container's traffic follows the pods' (the containers_pod_* rows, --pod-policy allow included)",
	"--resolver":     "it checks the agent's DNS stub; a container's names go to the pods' (containers_pod_dns)",
}

// notInContainerRows are rows left out by name, each with its reason.
var notInContainerRows = map[string]string{}

func init() {
	for reason, names := range map[string][]string{
		// Tools: the image is the host's static busybox and the probe; a
		// bind of the host's /usr is refused (outside the workdir).
		"it runs a host tool (curl, python3, git, gcc, go, java, node, lsattr, sbatch) that the busybox image has not": {
			"work_gcc", "work_go_build", "work_git_commit", "work_git_init_nested", "work_node", "work_java_numa",
			"work_python_multiprocessing", "work_lsattr", "egress_proxy_metadata", "slurm_real_sbatch",
		},
		// The image's /etc is its own (none here): the sandbox's filtered
		// /etc and its masks are not a container's.
		"it checks the sandbox's /etc (filtered accounts, masked shadow files); a container's /etc is its image's": {
			"read_etc_shadow", "read_etc_gshadow", "write_etc_passwd", "work_read_etc_passwd",
			"enumerate_host_accounts", "enumerate_host_groups", "work_own_account",
		},
		// The refusal of setuid and setgid files is the sandbox's own
		// profile (seccomp.Sandbox); a container keeps Default, in which
		// dpkg sets them (sudo, ssh-keysign), and the rows run python3.
		"it checks the sandbox's refusal of setuid and setgid files, which a container's profile leaves out (dpkg sets them), with python3, which the busybox image has not": {
			"make_setuid_file_in_workdir", "make_setuid_file_openat2",
		},
		// The rows' stdin is what stockade hands the command; a
		// container's is what the engine gives it.
		"it checks the stdio stockade hands the sandboxed command (a redirect's file, /dev/null, a directory); a container's stdio comes from the engine": {
			"stdin_host_devnull_chmod", "stdin_host_file_chmod", "stdin_host_fifo_chmod", "stdin_host_directory",
		},
		// The container's root is a layer of its own, writable.
		"it checks that the sandbox's system trees are read-only; a container's root is its own writable layer": {
			"create_in_usr_bin", "create_in_root_dir", "create_in_opt", "tmpfs_default_budget",
		},
		// PID 1 of a container is its entrypoint (the rows' shell, sealed),
		// not stockade's init, which is in the sandbox's PID namespace and
		// out of the container's view (signal_host_process and
		// proc_of_host_process show it for every process outside).
		"it checks stockade's init as PID 1; PID 1 of a container is the container's own entrypoint": {
			"read_init_environ", "read_init_root", "readlink_init_exe", "overwrite_init_exe", "read_init_mem",
			"setns_init_mount_ns",
		},
		// The container's user namespace maps the subordinate range
		// (rootless containers need it): another id there is another
		// subordinate id, nobody's on the host.
		"it checks that only the invoking id is mapped; a container's user namespace maps the subordinate range": {
			"setuid_nobody",
		},
		// The user namespace limits under /proc/sys/user are per namespace:
		// the container's own reads unset (the maximum), and the kernel
		// charges what it uses to every parent, the sandbox's quarter
		// included (inotify_instances_user_quota runs).
		"it reads the sandbox's own /proc/sys/user limit; a container reads its user namespace's, which the sandbox's still bounds": {
			"inotify_watches_user_quota", "user_namespaces_user_quota",
		},
		// The container gets a read-only sysfs of its own, as every OCI
		// container does (ocihook: sysfs read-only).
		"it checks that the sandbox has no /sys; a container has a read-only sysfs by design": {
			"list_sys",
		},
		// What the sandbox puts in its own /run and HOME is not bound into
		// a container (a bind from outside the workdir is refused).
		"it checks the sandbox's /run/stockade (the denials file), which a container does not see": {
			"why_denials_write", "why_denials_truncate", "why_denials_chmod", "why_denials_unlink",
			"why_denials_rename_over", "why_denials_rename_away", "why_denials_dir_rename", "why_denials_dir_rmdir",
			"why_denials_umount", "why_denials_dir_umount", "why_denials_remount_rw", "why_denials_writable_mount",
			"why_denials_init_fd_link", "why_denials_init_fd_open", "why_denials_init_getfd", "why_denials_forge_line",
		},
		"it uses the sandbox HOME, which is not in a container (a bind of it is refused: containers_bind_home)": {
			"work_home_writable", "link_parent_cursor_to_home", "link_protected_into_sandbox_home",
		},
		"it checks the environment the sandbox's command gets from the project; a container's is the engine's": {
			"work_project_tightens",
		},
		// The agent's proxies listen on the sandbox's 127.0.0.1, out of a
		// container's reach by design (containers_pod_agent_proxy); the
		// pods' are on 169.254.1.1 (the containers_pod_* rows).
		"it checks that the agent's proxies on the sandbox's loopback are reachable; a container must not reach them": {
			"egress_http_proxy_reachable", "egress_socks5_reachable",
		},
		// slirp4netns answers nothing for a datagram to port 53 it cannot
		// send (the sandbox's network namespace has no route), and the
		// probe reads silence as a peer; to other ports it reports the
		// network unreachable, as connect_public_udp_ipv6 shows.
		"a datagram to port 53 gets no answer in a container, which the probe cannot tell from a silent peer": {
			"connect_public_udp", "egress_direct_dns_udp",
		},
	} {
		for _, n := range names {
			notInContainerRows[n] = reason
		}
	}
}

// containerCase is a row's verdict in a container where it differs from the
// sandbox's, with the reason.
type containerCase struct {
	want, wantUser string
	why            string
}

// unreachable: with an engine the sandbox has no capture rules, and
// slirp4netns, whose sockets are in the sandbox's network namespace (only
// lo), finds no route: the container's connect fails at once.
var unreachable = containerCase{want: "DENIED ENETUNREACH", why: "no route from the sandbox's network namespace (slirp4netns)"}

// defaultCaps are Docker's default capabilities (ocihook.DefaultCaps), in
// the container's own user namespace.
const defaultCaps = "OK CapPrm=00000000800405fb,CapEff=00000000800405fb,CapBnd=00000000800405fb"

// inContainerWant are the rows whose answer in a container is not the
// sandbox's, and why that is still the attack failing.
var inContainerWant = map[string]containerCase{
	// The container's root holds CAP_DAC_OVERRIDE in its own user
	// namespace: it passes the mask's permission check and meets the
	// read-only mount (a file that is not a socket, for a connect).
	"write_dotenv":                   {want: "DENIED EROFS", why: "CAP_DAC_OVERRIDE of the container's namespace, then the read-only mask"},
	"connect_host_socket_in_workdir": {want: "DENIED ECONNREFUSED", why: "CAP_DAC_OVERRIDE of the container's namespace, then the mask, not a socket"},
	// A container holds Docker's default capabilities (sealed with
	// --keep-caps), in its own user namespace: exactly those, no more,
	// and a file capability adds none (nosuid, no_new_privs).
	"capabilities_held": {want: defaultCaps, why: "Docker's default capabilities, in the container's user namespace"},
	"file_caps_binary":  {want: defaultCaps, why: "Docker's default capabilities, none from the file"},
	// slirp4netns's interface.
	"interfaces":              {want: "OK lo,tap0", why: "slirp4netns's tap0, whose traffic leaves through the sandbox's network namespace"},
	"connect_public_tcp":      unreachable,
	"connect_public_ipv6":     unreachable,
	"connect_public_udp_ipv6": unreachable,
	"connect_cloud_metadata":  unreachable,
	"connect_private_range":   unreachable,
	"connect_host_address":    unreachable,
	"egress_direct_dns_tcp":   unreachable,
	// seccomp.OCI renders the sandbox's profile for the runtime and
	// denies more, never less: an allowed exception to a denied family
	// (FS_IOC_FSGETXATTR) is dropped, and personality is denied but for
	// PER_LINUX, its query included. A must-work gap of containers, not
	// an escape: a fix of seccomp.OCI changes these two lines.
	"work_ioctl_fsgetxattr":  {want: "DENIED EPERM", why: "seccomp.OCI drops the exception that allows FS_IOC_FSGETXATTR"},
	"work_personality_query": {want: "DENIED EPERM", why: "seccomp.OCI denies personality but PER_LINUX"},
}
