package escape

import (
	"os"
	"path/filepath"
	"syscall"
)

// fsRows: reading the developer's secrets and writing outside the project
// (docs/architecture.md, "Filesystem view"). The real HOME is never mounted: the
// sandbox HOME at the same path is a fresh directory, so a path of the real HOME is
// simply not there (ENOENT), and the same holds for every directory outside the view
// (another project).
var fsRows = []row{
	// Secrets of the real HOME.
	{name: "read_ssh_key", args: probe("read", "{home}/.ssh/id_rsa"), want: "DENIED ENOENT"},
	{name: "list_ssh_dir", args: probe("ls", "{home}/.ssh"), want: "DENIED ENOENT"},
	{name: "read_home_aws_credentials", args: probe("read", "{home}/.aws/credentials"), want: "DENIED ENOENT"},
	{name: "read_gh_token", args: probe("read", "{home}/.config/gh/hosts.yml"), want: "DENIED ENOENT"},
	{name: "read_real_bashrc", args: probe("read", "{home}/.bashrc"), want: "DENIED ENOENT"},
	// Another agent's persistent sandbox HOME lives under the real HOME: not visible.
	{name: "read_other_agent_home", args: probe("read", "{data}/stockade/home/other-agent/.credentials"), want: "DENIED ENOENT"},
	{name: "read_root_home", args: probe("ls", "/root"), want: "DENIED ENOENT"},
	// Other projects of the same user.
	{name: "read_other_project", args: probe("read", "{other}/secret.txt"), want: "DENIED ENOENT"},
	{name: "list_other_project", args: probe("ls", "{other}"), want: "DENIED ENOENT"},
	// System secrets: /etc is mounted, its secrets masked.
	{name: "read_etc_shadow", args: probe("read", "/etc/shadow"), want: "DENIED EMPTY"},
	{name: "read_etc_gshadow", args: probe("read", "/etc/gshadow"), want: "DENIED EMPTY"},
	// Masked files of the project: present, read empty (files) or empty (dirs).
	{name: "read_dotenv", args: probe("read", "{work}/.env"), want: "DENIED EMPTY"},
	{name: "read_dotenv_local", args: probe("read", "{work}/.env.local"), want: "DENIED EMPTY"},
	{name: "read_npmrc", args: probe("read", "{work}/.npmrc"), want: "DENIED EMPTY"},
	{name: "list_project_aws_dir", args: probe("ls", "{work}/.aws"), want: "DENIED EMPTY"},
	{name: "read_project_aws_credentials", args: probe("read", "{work}/.aws/credentials"), want: "DENIED ENOENT"},
	{name: "read_envrc", setup: files("work/.envrc", "export TOKEN=escape-test\n"),
		args: probe("read", "{work}/.envrc"), want: "DENIED EMPTY"},
	{name: "read_netrc", setup: files("work/.netrc", "machine x password escape-test\n"),
		args: probe("read", "{work}/.netrc"), want: "DENIED EMPTY"},
	{name: "read_mask_flag", setup: files("work/secrets.txt", "escape-test\n"),
		flags: []string{"--mask", "secrets.txt"}, args: probe("read", "{work}/secrets.txt"), want: "DENIED EMPTY"},
	{name: "read_mask_glob", setup: files("work/key.pem", "escape-test\n"),
		flags: []string{"--mask", "*.pem"}, args: probe("read", "{work}/key.pem"), want: "DENIED EMPTY"},
	// A masked file must stay masked through another name.
	{name: "read_dotenv_via_proc_self_root", args: probe("read", "/proc/self/root{work}/.env"), want: "DENIED EMPTY"},
	// Kernel information that helps an exploit.
	{name: "read_kallsyms", args: probe("read", "/proc/kallsyms"), want: "DENIED EMPTY"},
	{name: "list_sys", args: probe("ls", "/sys"), want: "DENIED ENOENT"},
	{name: "read_dev_kmsg", args: probe("read", "/dev/kmsg"), want: "DENIED ENOENT"},
	{name: "read_dev_mem", args: probe("read", "/dev/mem"), want: "DENIED ENOENT"},
	// Accounts of the host: /etc/passwd and /etc/group list root, the user and
	// nobody only (user enumeration on a shared machine); the user's own name
	// still resolves.
	{name: "enumerate_host_accounts", args: sh("cut -d: -f1 /etc/passwd | grep -vxE 'root|nobody|stockade-test' | wc -l"), want: "0"},
	{name: "enumerate_host_groups", args: sh("cut -d: -f1 /etc/group | grep -vxE 'root|nogroup|nobody|tty|stockade-test' | wc -l"), want: "0"},
	{name: "work_own_account", args: sh("id -un"), want: "root", wantUser: "stockade-test"},
	// The old chroot break-out: ".." from the root stays in the sandbox root.
	{name: "chdir_dotdot_escape", args: probe("chdir-escape"), want: "DENIED NONE"},

	// Writes outside the project. For root, only the read-only mount refuses; an
	// unprivileged user meets the file's permissions first (EACCES).
	// /etc/passwd is the sandbox's own filtered copy, a read-only 0444 file in
	// a read-only mount: the permission check refuses first, root included
	// (no CAP_DAC_OVERRIDE inside).
	{name: "write_etc_passwd", args: probe("write", "/etc/passwd"), want: "DENIED EACCES"},
	{name: "create_in_usr_bin", args: probe("create", "/usr/bin/stockade-escape"), want: "DENIED EROFS"},
	{name: "create_in_root_dir", args: probe("create", "/stockade-escape"), want: "DENIED EROFS"},
	{name: "create_in_opt", args: probe("create", "/opt/stockade-escape"), want: "DENIED EROFS"},
	// Shell rc persistence: the real ~/.bashrc is not there to append to.
	{name: "append_real_bashrc", args: probe("write", "{home}/.bashrc"), want: "DENIED ENOENT"},
	{name: "write_other_project", args: probe("write", "{other}/secret.txt"), want: "DENIED ENOENT"},
	{name: "write_other_project_hook", args: probe("write", "{other}/.git/hooks/pre-commit"), want: "DENIED ENOENT"},
	{name: "write_ro_flag_dir", flags: []string{"--ro", "{spare}"}, args: probe("write", "{spare}/data.txt"), want: "DENIED EROFS"},
	{name: "create_in_ro_flag_dir", flags: []string{"--ro", "{spare}"}, args: probe("create", "{spare}/new"), want: "DENIED EROFS"},
	{name: "remount_ro_flag_dir_rw", flags: []string{"--ro", "{spare}"}, args: probe("remount-rw", "{spare}"), want: "DENIED EPERM"},
	// Container escapes through /proc/sys (core_pattern runs a host program as root).
	// As for /etc/passwd, the unprivileged user meets the 0644 root-owned file first.
	{name: "write_core_pattern", args: probe("write", "/proc/sys/kernel/core_pattern"),
		want: "DENIED EROFS", wantUser: "DENIED EACCES"},
	{name: "write_proc_sys_hostname", args: probe("write", "/proc/sys/kernel/hostname"),
		want: "DENIED EROFS", wantUser: "DENIED EACCES"},
	{name: "write_uid_map", args: probe("write", "/proc/self/uid_map"), want: "DENIED EPERM"},
	{name: "mknod_dev_mem", args: probe("mknod-char", "{work}/mem"), want: "DENIED EPERM"},
	{name: "mknod_dev_mem_tmp", args: probe("mknod-char", "/tmp/mem"), want: "DENIED EPERM"},
	// The device nodes of /dev are the host's own inodes, bound in. Root's
	// sandbox is uid 0, their owner: chmod needs no capability, and a
	// chmod 600 /dev/null took it from every process of the host. The
	// binds are read-only (a device opens for writing all the same). The
	// row puts the mode back if the chmod went through.
	{name: "chmod_host_device", args: sh(`chmod 600 /dev/zero 2>/dev/null; m=$(stat -c %a /dev/zero); chmod 666 /dev/zero 2>/dev/null; echo $m`), want: "666"},
	// The same through stdin: a shell's redirect (< /dev/null, < FILE)
	// hands over a descriptor of the host's file, opened on the host's
	// own mount, past the read-only binds; fchmod through it changed the
	// host's /dev/null, and openat below a directory (< /) read the masked
	// .env and wrote .git/hooks. Anything but a pipe or a socket is
	// relayed through a pipe, and a directory is refused.
	{name: "stdin_host_devnull_chmod", args: sh(`chmod 600 /proc/self/fd/0 2>/dev/null; m=$(stat -c %a /dev/null); chmod 666 /proc/self/fd/0 2>/dev/null; echo $m $(stat -L -c %F /proc/self/fd/0)`),
		want: "666 fifo"},
	{name: "stdin_host_file_chmod", stdin: "{other}/secret.txt",
		args: sh(`chmod 666 /proc/self/fd/0 2>/dev/null; stat -L -c %F /proc/self/fd/0; cat`), want: "fifo\nanother project's secret"},
	// A FIFO of the host's filesystem is a file too: fchmod through it
	// changed its mode (the fixture's snapshot sees it).
	{name: "stdin_host_fifo_chmod", setup: fifoAt("spare/fifo"), stdin: "{spare}/fifo",
		args: sh(`chmod 666 /proc/self/fd/0 2>/dev/null; stat -L -c %F /proc/self/fd/0`), want: "fifo"},
	{name: "stdin_host_directory", stdin: "{work}/..", want: "REFUSED", refused: "stdin is a directory",
		args: sh(`exec 3<&0 0</dev/null; python3 -c "import os, sys; print(os.read(os.open(os.path.basename(sys.argv[1]) + '/.env', os.O_RDONLY, dir_fd=3), 100).decode().strip())" {work}`)},
	{name: "write_host_device", args: sh(`echo x >/dev/null && head -c 3 /dev/zero | od -An -tx1 | tr -d ' '`), want: "000000"},
}

// fifoAt returns a setup that makes a FIFO (mode 0600) at p, relative to
// the fixture.
func fifoAt(p string) func(fx *fixture) error {
	return func(fx *fixture) error { return syscall.Mkfifo(filepath.Join(fx.base, p), 0o600) }
}

// files returns a setup that writes pairs of (path relative to the fixture, content).
func files(pairs ...string) func(fx *fixture) error {
	return func(fx *fixture) error {
		for i := 0; i+1 < len(pairs); i += 2 {
			if err := fx.writeFile(pairs[i], pairs[i+1], 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

// without returns a setup that removes paths (relative to the fixture).
func without(paths ...string) func(fx *fixture) error {
	return func(fx *fixture) error {
		for _, p := range paths {
			if err := os.RemoveAll(filepath.Join(fx.base, p)); err != nil {
				return err
			}
		}
		return nil
	}
}
