package seccomp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
)

// ErrNotSupported is returned where seccomp filters cannot be installed (non-Linux).
var ErrNotSupported = errors.New("seccomp is not supported on this system")

// Action is what the kernel does with a matched system call: a SECCOMP_RET_*
// value, including its 16 data bits for Errno.
type Action uint32

// Return values from include/uapi/linux/seccomp.h. They are spelled out here,
// not taken from x/sys/unix, so that the profile compiles the same on every OS
// (a test checks them against unix on Linux).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
	retData        = 0x0000ffff
)

// Linux errno values (include/uapi/asm-generic/errno-base.h, errno.h). Other
// systems number them differently, so the profile does not use syscall.EPERM.
const (
	linuxEPERM  syscall.Errno = 1
	linuxENOSYS syscall.Errno = 38
)

const (
	// Allow lets the system call run.
	Allow Action = retAllow
	// KillProcess kills the whole thread group with SIGSYS. Default uses it
	// only for calls no correct program makes (foreign architecture, x32);
	// an Allowlist gives it to every call it does not name.
	KillProcess Action = retKillProcess
)

// Errno returns the action that fails the call with the given Linux errno
// without running it.
func Errno(e syscall.Errno) Action { return Action(retErrno | uint32(e)&retData) }

// EPERM is the action of every denial in Default but one (clone3).
const EPERM Action = retErrno | Action(linuxEPERM)

// Errno reports the errno of an Errno action, and false for other actions.
func (a Action) Errno() (syscall.Errno, bool) {
	if uint32(a)&^retData != retErrno {
		return 0, false
	}
	return syscall.Errno(uint32(a) & retData), true
}

func (a Action) valid() bool {
	_, isErrno := a.Errno()
	return a == Allow || a == KillProcess || isErrno
}

func (a Action) String() string {
	switch e, isErrno := a.Errno(); {
	case a == Allow:
		return "allow"
	case a == KillProcess:
		return "kill-process"
	case isErrno && e == linuxEPERM:
		return "errno(EPERM)"
	case isErrno && e == linuxENOSYS:
		return "errno(ENOSYS)"
	case isErrno:
		return fmt.Sprintf("errno(%d)", uint32(e))
	}
	return fmt.Sprintf("action(%#x)", uint32(a))
}

// Width is the size of the C type the kernel reads an argument as. It decides
// which halves of the 64-bit register the filter compares: the kernel truncates
// an int argument to its low 32 bits, so a filter that compared all 64 bits of
// ioctl's cmd could be bypassed by setting a high bit (TIOCSTI|1<<32).
type Width uint8

const (
	// Word32 compares only the low 32 bits (int, unsigned int, umode_t, ...).
	Word32 Width = 32
	// Word64 compares both halves (long, unsigned long, pointers).
	Word64 Width = 64
)

// Op is a comparison of one argument with a constant. All comparisons are
// unsigned, as in classic BPF: a negative int is a large number.
type Op uint8

const (
	// Equal matches arg == Value.
	Equal Op = iota + 1
	// NotEqual matches arg != Value.
	NotEqual
	// GreaterEqual matches arg >= Value.
	GreaterEqual
	// MaskedAny matches arg&Value != 0: any of the bits in Value is set.
	MaskedAny
	// MaskedEqual matches arg&Mask == Value.
	MaskedEqual
)

var opNames = map[Op]string{Equal: "==", NotEqual: "!=", GreaterEqual: ">=", MaskedAny: "&", MaskedEqual: "&mask=="}

// ArgMatch is a condition on one system call argument.
type ArgMatch struct {
	Index int    // argument position, 0 to 5
	Width Width  // Word32 or Word64; there is no default on purpose
	Op    Op     // comparison
	Value uint64 // constant compared with
	Mask  uint64 // MaskedEqual only
}

func (m ArgMatch) String() string {
	if m.Op == MaskedEqual {
		return fmt.Sprintf("arg%d&%#x==%#x", m.Index, m.Mask, m.Value)
	}
	return fmt.Sprintf("arg%d%s%#x", m.Index, opNames[m.Op], m.Value)
}

func (m ArgMatch) validate() error {
	if m.Index < 0 || m.Index > 5 {
		return fmt.Errorf("argument index %d out of range 0..5", m.Index)
	}
	if _, ok := opNames[m.Op]; !ok {
		return fmt.Errorf("unknown comparison %d", m.Op)
	}
	limit := uint64(1<<32 - 1)
	switch m.Width {
	case Word32:
	case Word64:
		limit = 1<<64 - 1
	default:
		return fmt.Errorf("argument %d has width %d, want 32 or 64", m.Index, m.Width)
	}
	if m.Value > limit || m.Mask > limit {
		return fmt.Errorf("%v does not fit in %d bits, so it could never match", m, m.Width)
	}
	switch {
	case m.Op == MaskedAny && m.Value == 0:
		return fmt.Errorf("%v: empty mask never matches", m)
	case m.Op == MaskedEqual && m.Value&^m.Mask != 0:
		return fmt.Errorf("%v: value has bits outside the mask, so it never matches", m)
	case m.Op != MaskedEqual && m.Mask != 0:
		return fmt.Errorf("%v: Mask is only used by MaskedEqual", m)
	}
	return nil
}

// Rule gives Action to each named system call whose arguments match all of
// Args. A rule without Args matches every call of those names.
type Rule struct {
	Names  []string
	Args   []ArgMatch
	Action Action
	// Reason says, in one line, what the rule protects against.
	Reason string
}

// Profile is a seccomp policy as data. For each system call the rules naming
// it are tried in order and the first match decides; a call no rule matches
// gets DefaultAction. A Profile holds no kernel state; Compile turns it into
// a BPF program for one architecture.
type Profile struct {
	DefaultAction Action
	Rules         []Rule
	// Kept records what the profile leaves to DefaultAction on purpose
	// although other profiles refuse it. Compile ignores it.
	Kept []Kept
}

// Kept is a system call, or one use of it, that a profile stockade was
// compared with refuses and this one allows, with the reason.
type Kept struct {
	Names []string
	// Use names the arguments concerned ("MAP_GROWSDOWN"), or is empty when
	// every call is kept; then no rule may name the call.
	Use    string
	Reason string
}

// Len returns the number of rules, counting a rule once per system call it
// names (the "seccomp: N rules" line at startup).
func (p Profile) Len() int {
	n := 0
	for _, r := range p.Rules {
		n += len(r.Names)
	}
	return n
}

// Names returns the sorted names of the system calls the profile has a rule
// for, whether the rule denies every call or only some arguments.
func (p Profile) Names() []string {
	var names []string
	for _, r := range p.Rules {
		names = append(names, r.Names...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Validate reports the first rule that cannot be compiled or can never take
// effect: an unknown system call, a bad argument condition, an exact duplicate,
// or a rule shadowed by an earlier unconditional rule for the same call.
func (p Profile) Validate() error {
	if !p.DefaultAction.valid() {
		return fmt.Errorf("validating seccomp profile: default action %v is not supported", p.DefaultAction)
	}
	earlier := make(map[string][][]ArgMatch) // name -> conditions of its rules so far
	for i, r := range p.Rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("validating seccomp rule %d (%s): %w", i, strings.Join(r.Names, ","), err)
		}
		for _, name := range r.Names {
			for _, args := range earlier[name] {
				switch {
				case len(args) == 0:
					return fmt.Errorf("validating seccomp rule %d: %s already has an unconditional rule, so this one never applies", i, name)
				case slices.Equal(args, r.Args):
					return fmt.Errorf("validating seccomp rule %d: duplicate rule for %s %v", i, name, r.Args)
				}
			}
			earlier[name] = append(earlier[name], r.Args)
		}
	}
	return p.validateKept(earlier)
}

// validateKept reports a kept entry without names or reason, or one that
// keeps a whole call that a rule names.
func (p Profile) validateKept(ruled map[string][][]ArgMatch) error {
	for i, k := range p.Kept {
		if len(k.Names) == 0 || k.Reason == "" {
			return fmt.Errorf("validating seccomp profile: kept entry %d needs names and a reason", i)
		}
		for _, name := range k.Names {
			if _, found := ruled[name]; found && k.Use == "" {
				return fmt.Errorf("validating seccomp profile: %s is kept allowed, but a rule names it", name)
			}
		}
	}
	return nil
}

func (r Rule) validate() error {
	if len(r.Names) == 0 {
		return errors.New("rule names no system call")
	}
	if !r.Action.valid() {
		return fmt.Errorf("action %v is not supported", r.Action)
	}
	for _, name := range r.Names {
		if !knownSyscall(name) {
			return fmt.Errorf("unknown system call %q", name)
		}
	}
	for _, m := range r.Args {
		if err := m.validate(); err != nil {
			return err
		}
	}
	return nil
}
