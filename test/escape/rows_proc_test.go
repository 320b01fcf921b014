package escape

import (
	"os"
	"path/filepath"
)

// procRows: other processes (host and sandbox init), credentials and what the agent
// inherits from the shell that started it (docs/threats.md; docs/architecture.md,
// "Enforcement order": the environment is step H3, descriptors and capabilities
// are init's steps 8 and 9).
var procRows = []row{
	// A process of the same user on the host: invisible in the new PID namespace.
	{name: "signal_host_process", args: probe("kill", "{hostpid}", "0"), want: "DENIED ESRCH"},
	{name: "kill_host_process", args: probe("kill", "{hostpid}", "9"), want: "DENIED ESRCH"},
	{name: "proc_of_host_process", args: probe("read", "/proc/{hostpid}/cmdline"), want: "DENIED ENOENT"},
	{name: "pidfd_of_host_process", args: probe("pidfd-open", "{hostpid}"), want: "DENIED ESRCH"},
	{name: "ptrace_host_process", args: probe("ptrace-attach", "{hostpid}"), want: "DENIED EPERM"},
	// PID 1 is stockade's init, which knows the session: unreadable, untraceable, and
	// outside the agent's Landlock signal scope. Init is not dumpable, and
	// hidepid=ptraceable hides the whole directory (ENOENT), for root too
	// (hidepid=invisible exempted gid 0, root's group: /proc/1 was listed).
	{name: "ptrace_init", args: probe("ptrace-attach", "1"), want: "DENIED EPERM"},
	// Init confines itself before it forks the command, so both share a
	// Landlock domain and the command may signal PID 1. What it may not do
	// is stop or kill it: the kernel ignores SIGKILL and SIGSTOP sent to a
	// PID namespace's init from inside, so the sandbox keeps its reaper.
	{name: "kill_init", args: sh("kill -KILL 1; kill -STOP 1; sleep 0.2; kill -0 1 && echo alive"), want: "alive", wantUser: "alive"},
	{name: "read_init_environ", args: probe("read", "/proc/1/environ"), want: "DENIED ENOENT"},
	{name: "read_init_root", args: probe("ls", "/proc/1/root/"), want: "DENIED ENOENT"},
	{name: "readlink_init_exe", args: probe("readlink", "/proc/1/exe"), want: "DENIED ENOENT"},
	// CVE-2019-5736 (runc): overwriting the runtime binary through /proc/PID/exe.
	{name: "overwrite_init_exe", args: probe("write", "/proc/1/exe"), want: "DENIED ENOENT"},
	// A build that keeps the supervisor's memory in init (cgo, -race,
	// PIE) holds the auth proxy's keys there: its memory file refuses too.
	{name: "read_init_mem", args: probe("read", "/proc/1/mem"), want: "DENIED ENOENT"},
	{name: "process_vm_readv_init", args: probe("process-vm-readv", "1"), want: "DENIED EPERM"},
	{name: "pidfd_getfd_init", args: probe("pidfd-getfd", "1", "0"), want: "DENIED EPERM"},
	// Siblings inside the sandbox: ptrace is the door to most kernel exploits.
	{name: "ptrace_traceme", args: probe("ptrace-traceme"), want: "DENIED EPERM"},
	{name: "ptrace_sibling", args: probe("ptrace-attach", "child"), want: "DENIED EPERM"},
	{name: "process_vm_readv_sibling", args: probe("process-vm-readv", "child"), want: "DENIED EPERM"},
	// Capabilities: none in any set, and none to be had.
	{name: "capabilities_held", args: probe("caps"), want: "DENIED NONE"},
	{name: "capset_sys_admin", args: probe("capset"), want: "DENIED EPERM"},
	{name: "ambient_raise_sys_admin", args: probe("ambient-raise"), want: "DENIED EPERM"},
	// Only the invoking uid is mapped in the sandbox's user namespace.
	{name: "setuid_nobody", args: probe("setuid", "65534"), want: "DENIED EINVAL"},
	// setuid and file-capability binaries: nosuid mounts and no_new_privs.
	{name: "setuid_binary_in_workdir", needsRoot: true, setup: setuidCopy("work/suid-probe"),
		args: probe("exec", "{work}/suid-probe", "euid-changed", "{uid}"), want: "DENIED NOSUID"},
	{name: "setuid_binary_in_ro_dir", needsRoot: true, setup: setuidCopy("spare/suid-probe"),
		flags: []string{"--ro", "{spare}"},
		args:  probe("exec", "{spare}/suid-probe", "euid-changed", "{uid}"), want: "DENIED NOSUID"},
	// A setuid or setgid file the command makes is inert inside, but on
	// the host's own mount of the workdir it runs as its owner, the user
	// or (under a root supervisor) root, for whoever can reach it: chmod
	// needs no capability on one's own file. Seccomp refuses the bits in
	// chmod and in a creating open's mode, and openat2 (whose mode it
	// cannot read) is ENOSYS.
	{name: "make_setuid_file_in_workdir", args: sh(`cd {work}; : >a; chmod 755 a; chmod 4755 a 2>/dev/null; chmod g+s a 2>/dev/null; ` +
		`python3 -c "import os; os.open('b', os.O_CREAT|os.O_WRONLY, 0o4755)" 2>/dev/null; test -e b && b=made || b=none; echo $(stat -c %a a) $b`),
		want: "755 none"},
	{name: "make_setuid_file_openat2", args: sh(`cd {work}; python3 -c "
import ctypes, os, struct
l = ctypes.CDLL(None, use_errno=True)
how = struct.pack('QQQ', os.O_CREAT | os.O_WRONLY, 0o4755, 0)
r = l.syscall(437, -100, b'c', how, len(how))
print(os.strerror(ctypes.get_errno()) if r < 0 else 'opened', end=' ')"; test -e c && echo made || echo none`),
		want: "Function not implemented none"},
	{name: "file_caps_binary", needsRoot: true, setup: fileCapsCopy("work/cap-probe"),
		args: probe("exec", "{work}/cap-probe", "caps"), want: "DENIED NONE"},
	{name: "su_root", args: sh("su -c true root </dev/null >/dev/null 2>&1 && echo OK || echo DENIED"), want: "DENIED"},
	{name: "setuid_mount_binary", args: sh("mount -t tmpfs none /tmp >/dev/null 2>&1 && echo OK || echo DENIED"), want: "DENIED"},
	// sudo, where installed, must not work either.
	{name: "sudo", args: sh("sudo -n true >/dev/null 2>&1 && echo OK || echo DENIED"), want: "DENIED"},
	// Credentials in the environment of the shell that started stockade.
	{name: "credential_env_vars", args: probe("env-scan"), want: "DENIED NONE"},
	{name: "ssh_auth_sock_env", args: probe("getenv", "SSH_AUTH_SOCK"), want: "DENIED NONE"},
	{name: "github_token_env", args: probe("getenv", "GITHUB_TOKEN"), want: "DENIED NONE"},
	// An fd the launcher inherited (fd 3: the SSH key) must be closed before exec.
	{name: "inherited_fds", args: probe("fd-scan"), want: "DENIED NONE"},
}

// setuidCopy returns a setup that installs a setuid copy of the probe owned by a
// user other than the runner: root for the unprivileged run, nobody for root.
func setuidCopy(rel string) func(fx *fixture) error {
	return func(fx *fixture) error {
		p, err := copyProbe(fx, rel)
		if err != nil {
			return err
		}
		owner := 0
		if fx.ru.uid == 0 {
			owner = 65534
		}
		if err := os.Chown(p, owner, owner); err != nil {
			return err
		}
		return os.Chmod(p, 0o4755|os.ModeSetuid)
	}
}

// fileCapsCopy returns a setup that installs a copy of the probe with file
// capabilities CAP_SYS_ADMIN and CAP_NET_RAW, permitted and effective (setcap).
func fileCapsCopy(rel string) func(fx *fixture) error {
	return func(fx *fixture) error {
		p, err := copyProbe(fx, rel)
		if err != nil {
			return err
		}
		return setFileCaps(p)
	}
}

func copyProbe(fx *fixture, rel string) (string, error) {
	b, err := os.ReadFile(probeBin)
	if err != nil {
		return "", err
	}
	p := filepath.Join(fx.base, rel)
	if fx.keepOwner == nil {
		fx.keepOwner = map[string]bool{}
	}
	fx.keepOwner[p] = true
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, b, 0o755)
}
