//go:build linux

package landlock

import (
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
