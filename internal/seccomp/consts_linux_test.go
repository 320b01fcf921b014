package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestConstants checks the kernel values the package spells out (so that it
// builds on any OS) against x/sys/unix for the arch the test is built for.
// amd64 and arm64 share every one of them.
func TestConstants(t *testing.T) {
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"CLONE_NEWTIME", cloneNewTime, unix.CLONE_NEWTIME},
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"AF_INET", afINET, unix.AF_INET},
		{"AF_INET6", afINET6, unix.AF_INET6},
		{"AF_PACKET", afPacket, unix.AF_PACKET},
		{"AF_VSOCK", afVSOCK, unix.AF_VSOCK},
		{"SOCK_RAW", sockRaw, unix.SOCK_RAW},
		{"SOCK_PACKET", sockPacket, unix.SOCK_PACKET},
		{"SOCK_NONBLOCK|SOCK_CLOEXEC outside the type mask", sockTypeMask & (unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC), 0},
		{"IPPROTO_MPTCP", ipprotoMPTCP, unix.IPPROTO_MPTCP},
		{"MSG_OOB", msgOOB, unix.MSG_OOB},
		{"TIOCSTI", tiocSTI, unix.TIOCSTI},
		{"TIOCLINUX", tiocLinux, unix.TIOCLINUX},
		{"TIOCSETD", tiocSetD, unix.TIOCSETD},
		{"SIOCATMARK", siocAtMark, unix.SIOCATMARK},
		{"FICLONE", fiClone, unix.FICLONE},
		{"FICLONERANGE", fiCloneRange, unix.FICLONERANGE},
		{"PR_SET_DUMPABLE", prSetDumpable, unix.PR_SET_DUMPABLE},
		{"PR_SET_PTRACER", prSetPtracer, unix.PR_SET_PTRACER},
		{"S_IFMT", sIFMT, unix.S_IFMT},
		{"S_IFCHR", sIFCHR, unix.S_IFCHR},
		{"S_IFBLK", sIFBLK, unix.S_IFBLK},
		{"EPERM", uint64(linuxEPERM), uint64(unix.EPERM)},
		{"ENOSYS", uint64(linuxENOSYS), uint64(unix.ENOSYS)},
		{"SECCOMP_RET_KILL_PROCESS", retKillProcess, unix.SECCOMP_RET_KILL_PROCESS},
		{"SECCOMP_RET_ERRNO", retErrno, unix.SECCOMP_RET_ERRNO},
		{"SECCOMP_RET_ALLOW", retAllow, unix.SECCOMP_RET_ALLOW},
		{"SECCOMP_RET_DATA", retData, unix.SECCOMP_RET_DATA},
		{"AUDIT_ARCH_X86_64", uint64(arches[AMD64].auditArch), unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", uint64(arches[ARM64].auditArch), unix.AUDIT_ARCH_AARCH64},
		{"AUDIT_ARCH_I386", auditI386, unix.AUDIT_ARCH_I386},
		{"AUDIT_ARCH_ARM", auditARM, unix.AUDIT_ARCH_ARM},
		{"BPF_MAXINSNS", maxInstructions, unix.BPF_MAXINSNS},
		{"LD|W|ABS", opLdAbsW, unix.BPF_LD | unix.BPF_W | unix.BPF_ABS},
		{"ALU|AND|K", opAndK, unix.BPF_ALU | unix.BPF_AND | unix.BPF_K},
		{"JMP|JA", opJa, unix.BPF_JMP | unix.BPF_JA},
		{"JMP|JEQ|K", opJeqK, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K},
		{"JMP|JGT|K", opJgtK, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K},
		{"JMP|JGE|K", opJgeK, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K},
		{"JMP|JSET|K", opJsetK, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K},
		{"RET|K", opRetK, unix.BPF_RET | unix.BPF_K},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, unix says %#x", tt.name, tt.got, tt.want)
		}
	}
}
