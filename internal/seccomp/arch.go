package seccomp

import (
	"fmt"
	"runtime"
	"slices"
)

// Arch is a system call ABI a filter is compiled for. Each has its own
// system call numbers and its own AUDIT_ARCH value in seccomp_data.arch.
type Arch uint8

const (
	// AMD64 is x86_64 (AUDIT_ARCH_X86_64). Its x32 ABI shares the audit arch
	// and is told apart by bit 30 of the system call number.
	AMD64 Arch = iota + 1
	// ARM64 is little-endian aarch64 (AUDIT_ARCH_AARCH64).
	ARM64
)

// archInfo is everything Compile needs to know about an Arch.
type archInfo struct {
	name      string
	auditArch uint32
	// x32Bit, when non-zero, marks system call numbers of a second ABI that
	// shares auditArch (x86_64's x32). The filter kills them: a profile
	// written for one numbering would not apply to the other.
	x32Bit  uint32
	numbers func() map[string]uint32
	// absent lists calls the profile may name that this ABI never had
	// (arm64 has only the *at forms). Compile skips them.
	absent []string
}

// AUDIT_ARCH_* from include/uapi/linux/audit.h: EM_* | 64BIT | LE.
var arches = map[Arch]archInfo{
	AMD64: {name: "amd64", auditArch: 0xc000003e, x32Bit: 0x40000000, numbers: amd64Numbers},
	ARM64: {name: "arm64", auditArch: 0xc00000b7, numbers: arm64Numbers, absent: arm64Absent},
}

func (a Arch) String() string {
	if info, ok := arches[a]; ok {
		return info.name
	}
	return fmt.Sprintf("Arch(%d)", uint8(a))
}

// Arches returns every architecture Compile supports.
func Arches() []Arch { return []Arch{AMD64, ARM64} }

// NativeArch returns the architecture of the running binary, which is the one
// the kernel checks for its system calls.
func NativeArch() (Arch, error) {
	switch runtime.GOARCH {
	case "amd64":
		return AMD64, nil
	case "arm64":
		return ARM64, nil
	}
	return 0, fmt.Errorf("finding the seccomp architecture: %s: %w", runtime.GOARCH, ErrNotSupported)
}

// lookup returns the number of the call name, and whether the arch has it.
func (info archInfo) lookup(name string) (nr uint32, ok bool) {
	nr, ok = info.numbers()[name]
	return nr, ok
}

// isAbsent reports whether name is a call this arch never had.
func (info archInfo) isAbsent(name string) bool { return slices.Contains(info.absent, name) }

// knownSyscall reports whether any supported architecture knows name.
func knownSyscall(name string) bool {
	for _, info := range arches {
		if _, ok := info.lookup(name); ok {
			return true
		}
	}
	return false
}
