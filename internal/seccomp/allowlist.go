package seccomp

import (
	"errors"
	"fmt"
	"slices"
)

// ErrUnknownSyscall is returned for a system call name no supported
// architecture has: a typo in an allowlist must not pass unnoticed.
var ErrUnknownSyscall = errors.New("unknown system call")

// Allowlist returns the profile that lets exactly names run on arch and
// kills the process (SIGSYS, SECCOMP_RET_KILL_PROCESS) at any other call:
// the syscalls.allow list of a stockade seal policy with defaultDeny.
//
// A name no architecture knows is ErrUnknownSyscall. A name another
// architecture has but arch lacks (access, arch_prctl on arm64) is left
// out: no program can make that call here, so allowing it would change
// nothing. rt_sigreturn is always allowed: it only restores registers
// the process could set itself, and without it every signal handler, including
// one that runs during the last instructions before execve, would kill the
// process on return.
func Allowlist(names []string, arch Arch) (Profile, error) {
	info, ok := arches[arch]
	if !ok {
		return Profile{}, fmt.Errorf("building a seccomp allowlist for %v: %w", arch, ErrNotSupported)
	}
	var kept []string
	for _, name := range append(slices.Clone(names), "rt_sigreturn") {
		if !knownSyscall(name) {
			return Profile{}, fmt.Errorf("%w %q", ErrUnknownSyscall, name)
		}
		if _, ok := info.lookup(name); ok && !slices.Contains(kept, name) {
			kept = append(kept, name)
		}
	}
	return Profile{
		DefaultAction: KillProcess,
		Rules:         []Rule{{Names: kept, Action: Allow, Reason: "named in the allowlist"}},
	}, nil
}

// Syscalls returns the sorted names of every system call arch has: what an
// allowlist can name there.
func Syscalls(arch Arch) []string {
	var names []string
	for name := range arches[arch].numbers() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
