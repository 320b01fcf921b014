//go:build !linux

package seccomp

// Instruction is one classic BPF instruction, laid out as Linux's struct
// sock_filter. Other systems have no unix.SockFilter, so it is declared here
// to let profiles compile and be tested on any OS.
type Instruction struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}
