//go:build linux

package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calls of x86 only: port I/O and the LDT.
func init() {
	register("modify-ldt", 0, func([]string) error { // read the LDT: 0 bytes when there is none
		buf := make([]byte, 16)
		_, _, e := unix.Syscall(unix.SYS_MODIFY_LDT, 0, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		return errnoOf(e)
	})
	register("iopl", 0, func([]string) error {
		_, _, e := unix.Syscall(unix.SYS_IOPL, 3, 0, 0)
		return errnoOf(e)
	})
	register("ioperm", 0, func([]string) error {
		_, _, e := unix.Syscall(unix.SYS_IOPERM, 0x80, 1, 1)
		return errnoOf(e)
	})
}
