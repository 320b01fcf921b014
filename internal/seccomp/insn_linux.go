package seccomp

import "golang.org/x/sys/unix"

// Instruction is one classic BPF instruction. On Linux it is unix.SockFilter,
// so the result of Compile goes straight into a sock_fprog.
type Instruction = unix.SockFilter
