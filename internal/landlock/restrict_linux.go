//go:build linux

package landlock

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RestrictThread enforces r on the calling thread only
// (landlock_restrict_self(2) acts on the caller), for a program that holds
// its goroutine on a locked OS thread and executes a command next: the new
// image keeps the domain of the thread that called execve, and execve ends
// the others. no_new_privs must be set on the thread first. Each rule's path
// must exist: a missing one is an error naming it, never a rule left out.
func RestrictThread(r Ruleset) error {
	fd, err := r.create()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, _, e := syscall.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("enforcing the landlock ruleset: %w", os.NewSyscallError("landlock_restrict_self", e))
	}
	return nil
}

// create makes the kernel's ruleset of r with every rule added, and returns
// its descriptor.
func (r Ruleset) create() (int, error) {
	attr := RulesetAttr{HandledFS: r.HandledFS, Scoped: r.Scoped}
	fd, _, e := syscall.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), RulesetAttrSize, 0)
	if e != 0 {
		return -1, fmt.Errorf("creating the landlock ruleset: %w", os.NewSyscallError("landlock_create_ruleset", e))
	}
	for _, rule := range r.Rules {
		if err := addRule(int(fd), rule); err != nil {
			unix.Close(int(fd))
			return -1, err
		}
	}
	return int(fd), nil
}

// addRule adds rule to the ruleset; on a file (anything but a directory)
// only the rights of AccessFile apply, as the kernel refuses the others.
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
