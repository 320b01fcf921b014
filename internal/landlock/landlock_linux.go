//go:build linux

package landlock

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RulesetAttr is struct landlock_ruleset_attr.
type RulesetAttr struct {
	HandledFS  uint64
	HandledNet uint64
	Scoped     uint64
}

// PathBeneathAttr is struct landlock_path_beneath_attr; the kernel reads
// its first 12 bytes (the struct is packed).
type PathBeneathAttr struct {
	Allowed uint64
	Fd      int32
	_       int32
}

const (
	createRulesetVersion = 1 // LANDLOCK_CREATE_RULESET_VERSION
	RulePathBeneath      = 1 // LANDLOCK_RULE_PATH_BENEATH
	// RulesetAttrSize is the size of the attr the kernel reads.
	RulesetAttrSize = unsafe.Sizeof(RulesetAttr{})
)

// ABI returns the Landlock ABI version of the running kernel (0 if none).
func ABI() int {
	v, _, e := syscall.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if e != 0 {
		return 0
	}
	return int(v)
}

// Restrict enforces the tiers on the calling Go process, on every thread.
// The caller must have set no_new_privs. It refuses to run below MinABI
// instead of degrading to nothing.
func Restrict(t Tiers) error {
	abi := ABI()
	if err := CheckABI(abi); err != nil {
		return err
	}
	return Compile(t, abi).restrict()
}

func (r Ruleset) restrict() error {
	attr := RulesetAttr{HandledFS: r.HandledFS, Scoped: r.Scoped}
	fd, _, e := syscall.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), RulesetAttrSize, 0)
	if e != 0 {
		return fmt.Errorf("creating the landlock ruleset: %w", os.NewSyscallError("landlock_create_ruleset", e))
	}
	defer unix.Close(int(fd))
	for _, rule := range r.Rules {
		if err := addRule(int(fd), rule); err != nil {
			return err
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("enforcing the landlock ruleset: %w", os.NewSyscallError("landlock_restrict_self", e))
	}
	return nil
}

func addRule(ruleset int, rule Rule) error {
	fd, err := unix.Open(rule.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule for %s: %w", rule.Path, os.NewSyscallError("open", err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule for %s: %w", rule.Path, os.NewSyscallError("fstat", err))
	}
	attr := PathBeneathAttr{Allowed: rule.Access, Fd: int32(fd)}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		attr.Allowed &= AccessFile
	}
	if attr.Allowed == 0 {
		return nil
	}
	if _, _, e := syscall.RawSyscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), RulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("landlock rule for %s: %w", rule.Path, os.NewSyscallError("landlock_add_rule", e))
	}
	return nil
}
