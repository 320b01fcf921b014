//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The breadth of the seccomp filter: calls and ioctls that no agent needs and
// that kernel exploits keep using. Every attempt is one an unconfined process
// could make with no effect on the machine: reads, queries, or objects that
// the probe makes and removes itself, so that only the filter can answer
// EPERM.
func init() {
	register("kcmp", 0, func([]string) error { // do I share my memory with myself?
		const kcmpVM = 1
		pid := uintptr(os.Getpid())
		_, _, e := unix.Syscall6(unix.SYS_KCMP, pid, pid, kcmpVM, 0, 0, 0)
		return errnoOf(e)
	})
	register("process-madvise", 0, processMadvise)
	register("remap-file-pages", 0, remapFilePages)
	register("vmsplice", 0, func([]string) error {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return err
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		b := []byte("x")
		iov := unix.Iovec{Base: &b[0], Len: 1}
		_, _, e := unix.Syscall6(unix.SYS_VMSPLICE, uintptr(p[1]), uintptr(unsafe.Pointer(&iov)), 1, 0, 0, 0)
		return errnoOf(e)
	})
	register("memfd-secret", 0, func([]string) error {
		return rawFD(unix.Syscall(unix.SYS_MEMFD_SECRET, unix.O_CLOEXEC, 0, 0))
	})
	register("mq-open", 0, func([]string) error {
		name, _ := unix.BytePtrFromString("stockade-escape")
		r, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)),
			unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600, 0, 0, 0)
		if e != 0 {
			return e
		}
		unix.Close(int(r))
		unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0)
		return nil
	})
	register("numa", 1, numa)
	register("listns", 0, func([]string) error {
		// struct ns_id_req (32 bytes): size, spare, ns_id, ns_type, spare2, user_ns_id.
		req := [4]uint64{32}
		ids := make([]uint64, 8)
		_, _, e := unix.Syscall6(unix.SYS_LISTNS, uintptr(unsafe.Pointer(&req)),
			uintptr(unsafe.Pointer(&ids[0])), uintptr(len(ids)), 0, 0, 0)
		return errnoOf(e)
	})
	register("ioctl", 2, func(a []string) error { return ioctlQuery(a[0], a[1], 0) })
	register("ioctl-hibits", 2, func(a []string) error { return ioctlQuery(a[0], a[1], 1<<32) })
	register("fiemap", 1, fiemap)
	register("watch-queue", 0, func([]string) error {
		// On an ordinary pipe: a notification pipe needs CONFIG_WATCH_QUEUE,
		// and without the filter the kernel answers ENODEV or ENOTTY here.
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return err
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		const setSize = 0x5760 // IOC_WATCH_QUEUE_SET_SIZE
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(p[0]), setSize, 1)
		return errnoOf(e)
	})
	register("send-oob", 1, sendOOB)
}

// processMadvise advises the kernel that a page of the probe's own memory is
// cold, through a pidfd of itself.
func processMadvise([]string) error {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(page)
	iov := unix.Iovec{Base: &page[0], Len: uint64(len(page))}
	_, _, e := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov)), 1,
		unix.MADV_COLD, 0, 0)
	return errnoOf(e)
}

// remapFilePages rearranges two pages of a shared mapping of the probe's own.
func remapFilePages([]string) error {
	size := os.Getpagesize()
	m, err := unix.Mmap(-1, 0, 2*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	_, _, e := unix.Syscall6(unix.SYS_REMAP_FILE_PAGES, uintptr(unsafe.Pointer(&m[0])), uintptr(size), 0, 1, 0, 0)
	return errnoOf(e)
}

// numa makes one NUMA call about the probe's own memory, asking for nothing
// but the default policy on node 0.
func numa(a []string) error {
	const mpolDefault = 0
	page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(page)
	page[0] = 1
	addr := uintptr(unsafe.Pointer(&page[0]))
	node0 := uint64(1)
	nodes := uintptr(unsafe.Pointer(&node0))
	var r [6]uintptr
	switch a[0] {
	case "mbind":
		r = [6]uintptr{unix.SYS_MBIND, addr, uintptr(len(page)), mpolDefault}
	case "set_mempolicy":
		r = [6]uintptr{unix.SYS_SET_MEMPOLICY, mpolDefault}
	case "get_mempolicy":
		var mode int32
		r = [6]uintptr{unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode))}
	case "move_pages": // where is this page? (nodes NULL: only query)
		var status int32
		r = [6]uintptr{unix.SYS_MOVE_PAGES, 0, 1, uintptr(unsafe.Pointer(&addr)), 0, uintptr(unsafe.Pointer(&status))}
	case "migrate_pages": // from node 0 to node 0
		r = [6]uintptr{unix.SYS_MIGRATE_PAGES, 0, 64, nodes, nodes}
	default:
		return fmt.Errorf("unknown NUMA call %q", a[0])
	}
	_, _, e := unix.Syscall6(r[0], r[1], r[2], r[3], r[4], r[5], 0)
	return errnoOf(e)
}

// ioctlQuery issues the ioctl cmd (a number, 0x... accepted) on path opened
// read-only, with a zeroed buffer as its argument; hi is or-ed into the
// command, above the 32 bits the kernel reads. Only queries go through here.
func ioctlQuery(path, cmd string, hi uintptr) error {
	c, err := strconv.ParseUint(cmd, 0, 32)
	if err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(c)|hi, uintptr(unsafe.Pointer(&buf[0])))
	return errnoOf(e)
}

// fiemap asks for the physical extents of path, as filefrag does.
func fiemap(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	const fsIocFiemap = 0xc020660b
	var req [32]uint64  // struct fiemap and room for extents
	req[1] = ^uint64(0) // fm_length: the whole file
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIocFiemap, uintptr(unsafe.Pointer(&req)))
	return errnoOf(e)
}

// sendOOB sends one byte of out-of-band data on a connected socket pair of
// the given family (unix, or tcp over loopback).
func sendOOB(a []string) error {
	var fds [2]int
	switch a[0] {
	case "unix":
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fds = p
	case "tcp":
		p, err := tcpPair()
		if err != nil {
			return err
		}
		fds = p
	default:
		return fmt.Errorf("unknown family %q", a[0])
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	return unix.Sendto(fds[0], []byte("!"), unix.MSG_OOB, nil)
}

// tcpPair connects two TCP sockets over 127.0.0.1.
func tcpPair() ([2]int, error) {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return [2]int{}, err
	}
	defer unix.Close(l)
	lo := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(l, lo); err != nil {
		return [2]int{}, err
	}
	if err := unix.Listen(l, 1); err != nil {
		return [2]int{}, err
	}
	addr, err := unix.Getsockname(l)
	if err != nil {
		return [2]int{}, err
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return [2]int{}, err
	}
	if err := unix.Connect(c, addr); err != nil {
		unix.Close(c)
		return [2]int{}, err
	}
	s, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
	if err != nil {
		unix.Close(c)
		return [2]int{}, err
	}
	return [2]int{c, s}, nil
}
