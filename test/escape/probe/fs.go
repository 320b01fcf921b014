//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Filesystem attempts: reading secrets, writing where the agent must not, and
// changing the mount tree that builds the sandbox's view.
func init() {
	register("read", 1, func(a []string) error {
		b, err := os.ReadFile(a[0])
		if err == nil && len(b) == 0 {
			return denial("EMPTY")
		}
		return err
	})
	register("ls", 1, func(a []string) error {
		ents, err := os.ReadDir(a[0])
		if err == nil && len(ents) == 0 {
			return denial("EMPTY")
		}
		return err
	})
	register("write", 1, func(a []string) error { // an existing file, no O_CREAT
		return writeFile(a[0], os.O_WRONLY|os.O_APPEND)
	})
	register("create", 1, func(a []string) error {
		return writeFile(a[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	})
	register("truncate", 1, func(a []string) error { return unix.Truncate(a[0], 0) })
	register("mkdir", 1, func(a []string) error { return unix.Mkdir(a[0], 0o755) })
	register("rename", 2, func(a []string) error { return unix.Rename(a[0], a[1]) })
	register("exchange", 2, func(a []string) error {
		return unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_EXCHANGE)
	})
	register("unlink", 1, func(a []string) error { return unix.Unlink(a[0]) })
	register("rmdir", 1, func(a []string) error { return unix.Rmdir(a[0]) })
	register("link", 2, func(a []string) error { return unix.Link(a[0], a[1]) })
	register("symlink", 2, func(a []string) error { return unix.Symlink(a[0], a[1]) })
	register("chmod", 1, func(a []string) error { return unix.Chmod(a[0], 0o777) })
	register("setxattr", 1, func(a []string) error {
		return unix.Setxattr(a[0], "user.stockade-escape", []byte("x"), 0)
	})
	// send-fd SOCK FILE listens on SOCK and hands a read-only descriptor
	// of FILE to the first to connect; recv-chmod SOCK takes it and makes
	// the file setuid through it (fchmod 04755): the command's way to
	// have a container change a file the container does not bind.
	register("send-fd", 2, func(a []string) error {
		f, err := os.Open(a[1])
		if err != nil {
			return err
		}
		defer f.Close()
		ln, err := net.Listen("unix", a[0])
		if err != nil {
			return err
		}
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		_, _, err = c.(*net.UnixConn).WriteMsgUnix([]byte{0}, unix.UnixRights(int(f.Fd())), nil)
		return err
	})
	register("recv-chmod", 1, func(a []string) error {
		var c net.Conn
		var err error
		for i := 0; i < 100; i++ { // the sender may not listen yet
			if c, err = net.Dial("unix", a[0]); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			return err
		}
		defer c.Close()
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := c.(*net.UnixConn).ReadMsgUnix(make([]byte, 1), oob)
		if err != nil {
			return err
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return fmt.Errorf("no descriptor came (%v)", err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			return fmt.Errorf("no descriptor came (%v)", err)
		}
		defer unix.Close(fds[0])
		return unix.Fchmod(fds[0], 0o4755)
	})
	register("mknod-char", 1, func(a []string) error { // /dev/mem's numbers
		return unix.Mknod(a[0], unix.S_IFCHR|0o666, int(unix.Mkdev(1, 1)))
	})
	register("mkfifo", 1, func(a []string) error { return unix.Mkfifo(a[0], 0o644) })
	register("readlink", 1, func(a []string) error {
		_, err := os.Readlink(a[0])
		return err
	})
	register("exec", -1, func(a []string) error { // replaces the probe
		return syscall.Exec(a[0], a, os.Environ())
	})

	register("mount-tmpfs", 1, func(a []string) error { return unix.Mount("tmpfs", a[0], "tmpfs", 0, "") })
	register("mount-proc", 1, func(a []string) error { return unix.Mount("proc", a[0], "proc", 0, "") })
	register("mount-cgroup", 1, func(a []string) error {
		return unix.Mount("cgroup", a[0], "cgroup", 0, "none,name=escape")
	})
	register("bind", 2, func(a []string) error { return unix.Mount(a[0], a[1], "", unix.MS_BIND, "") })
	register("remount-rw", 1, func(a []string) error {
		return unix.Mount("", a[0], "", unix.MS_REMOUNT|unix.MS_BIND, "")
	})
	register("make-shared", 1, func(a []string) error { return unix.Mount("", a[0], "", unix.MS_SHARED, "") })
	register("umount", 1, func(a []string) error { return unix.Unmount(a[0], unix.MNT_DETACH) })
	register("pivot-root", 2, func(a []string) error { return unix.PivotRoot(a[0], a[1]) })
	register("chroot", 1, func(a []string) error { return unix.Chroot(a[0]) })
	register("fsopen", 1, func(a []string) error {
		fd, err := unix.Fsopen(a[0], unix.FSOPEN_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	register("open-tree", 1, func(a []string) error {
		fd, err := unix.OpenTree(unix.AT_FDCWD, a[0], unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	register("mount-setattr", 1, func(a []string) error {
		attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
		return unix.MountSetattr(unix.AT_FDCWD, a[0], 0, &attr)
	})
	register("open-by-handle", 1, openByHandle)
	register("chdir-escape", 0, chdirEscape)
}

func writeFile(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0o755)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("#!/bin/sh\necho escaped\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openByHandle is the "shocker" escape (Docker 2014): a file handle names an inode
// on the host filesystem directly, bypassing the mount tree and the chroot.
func openByHandle(a []string) error {
	h, mountID, err := unix.NameToHandleAt(unix.AT_FDCWD, a[0], 0)
	if err != nil {
		return err
	}
	_ = mountID
	mfd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(mfd)
	fd, err := unix.OpenByHandleAt(mfd, h, unix.O_RDONLY)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// chdirEscape is the classic chroot break-out: climbing ".." from the root must stay
// at the sandbox root, which holds none of the host's top-level directories.
func chdirEscape([]string) error {
	for i := 0; i < 64; i++ {
		if err := unix.Chdir(".."); err != nil {
			return err
		}
	}
	for _, p := range []string{"root", "home", "srv", "boot"} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil {
			return found("/" + p)
		}
	}
	return denial("NONE")
}
