// Package landlock turns the four access tiers of the sandbox
// (docs/architecture.md, "Enforcement order") into one Landlock ruleset, as
// data: the sandbox's init applies it
// with raw system calls between clone and the command's execve, where no Go
// library can run.
//
// The tiers are cumulative grants; Landlock can only add rights under a
// directory, never take them away below it, so a path that must be read-only
// inside a writable tree (a protected .git/hooks) is made read-only by a mount,
// not by Landlock.
//
//	read_exec     read files and directories, execute       (/usr, /bin, --ro)
//	read_only     read files and directories                (/)
//	write_noexec  read, write, create, delete, device ioctl (/dev, /proc, /run)
//	write_exec    write_noexec plus execute                 (workdir, HOME, /tmp, --rw)
//
// Every tier carries Refer, so a rename or link inside the sandbox never fails
// with EXDEV just because Landlock is on; no tier grants MakeChar or MakeBlock.
// On ABI 6 and later, signals and abstract unix sockets are scoped to the
// sandbox. Below ABI 3 (no truncate control) stockade refuses to start: a
// sandbox that cannot stop truncating a read-only file is not one.
//
// What each ABI version can enforce is one table, abiInfos, with a test
// that checks it.
package landlock

import (
	"errors"
	"fmt"
	"slices"
)

// MinABI is the oldest Landlock ABI stockade accepts.
const MinABI = 3

// Access rights (include/uapi/linux/landlock.h).
const (
	AccessExecute    = 1 << 0
	AccessWriteFile  = 1 << 1
	AccessReadFile   = 1 << 2
	AccessReadDir    = 1 << 3
	AccessRemoveDir  = 1 << 4
	AccessRemoveFile = 1 << 5
	AccessMakeChar   = 1 << 6
	AccessMakeDir    = 1 << 7
	AccessMakeReg    = 1 << 8
	AccessMakeSock   = 1 << 9
	AccessMakeFifo   = 1 << 10
	AccessMakeBlock  = 1 << 11
	AccessMakeSym    = 1 << 12
	AccessRefer      = 1 << 13 // ABI 2
	AccessTruncate   = 1 << 14 // ABI 3
	AccessIoctlDev   = 1 << 15 // ABI 5

	// AccessFile are the rights that apply to a file; a rule on a file
	// may carry no others.
	AccessFile = AccessExecute | AccessWriteFile | AccessReadFile | AccessTruncate | AccessIoctlDev

	ScopeAbstractUnixSocket = 1 << 0 // ABI 6
	ScopeSignal             = 1 << 1 // ABI 6
)

const (
	read  = AccessReadFile | AccessReadDir
	write = AccessWriteFile | AccessRemoveDir | AccessRemoveFile | AccessMakeDir | AccessMakeReg | AccessMakeSock | AccessMakeFifo | AccessMakeSym | AccessTruncate
)

// fsV1 are the filesystem rights of ABI 1.
const fsV1 = AccessExecute | AccessWriteFile | AccessReadFile | AccessReadDir | AccessRemoveDir | AccessRemoveFile |
	AccessMakeChar | AccessMakeDir | AccessMakeReg | AccessMakeSock | AccessMakeFifo | AccessMakeBlock | AccessMakeSym

// abiInfo is what one Landlock ABI version can enforce.
type abiInfo struct {
	version int
	fs      uint64 // the filesystem rights it handles
	scoped  uint64 // the scopes it handles
	// adds names what this version adds that stockade enforces, for the
	// warning on an older kernel; "" when stockade uses nothing new of it.
	adds string
}

// abiInfos is everything stockade knows of the Landlock ABIs: one row per
// version, in order, each with all the rights of the one before
// (TestABIInfos). A kernel newer than the last row enforces what the last
// row lists. Compile, Nested and StatusFor read only this table.
var abiInfos = []abiInfo{
	{1, fsV1, 0, ""},
	{2, fsV1 | AccessRefer, 0, ""}, // below MinABI: refused, so never reported
	{3, fsV1 | AccessRefer | AccessTruncate, 0, "truncate control"},
	// Network rules: unused, the network namespace is the boundary.
	{4, fsV1 | AccessRefer | AccessTruncate, 0, ""},
	{5, fsV1 | AccessRefer | AccessTruncate | AccessIoctlDev, 0, "device ioctl control"},
	{6, fsV1 | AccessRefer | AccessTruncate | AccessIoctlDev, ScopeAbstractUnixSocket | ScopeSignal,
		"signal and abstract unix socket scoping"},
	// Audit logging flags: unused.
	{7, fsV1 | AccessRefer | AccessTruncate | AccessIoctlDev, ScopeAbstractUnixSocket | ScopeSignal, ""},
}

// abiInfoOf is the row of abi: the last one for a newer kernel, nothing
// for none.
func abiInfoOf(abi int) abiInfo {
	if abi < 1 {
		return abiInfo{version: abi}
	}
	return abiInfos[min(abi, len(abiInfos))-1]
}

// Levels are the access levels a stockade seal policy gives one path, as
// rights; like a tier, a level grants them beneath a directory. write
// implies read (a tool that writes a file reads it back), and readwrite is
// the same level under the name SafeClaw's policies use. Neither carries
// Execute: a path whose programs run is "execute", and one that is both
// written and run needs two entries (which is the point of asking).
var Levels = map[string]uint64{
	"read":      read,
	"execute":   read | AccessExecute,
	"write":     read | write | AccessRefer | AccessIoctlDev,
	"readwrite": read | write | AccessRefer | AccessIoctlDev,
}

// Handled returns the filesystem rights and scopes the kernel of the given
// ABI can handle: a ruleset handles them all, so that a right nobody grants
// is denied.
func Handled(abi int) (fs, scope uint64) {
	info := abiInfoOf(abi)
	return info.fs, info.scoped
}

// Ruleset is a Landlock ruleset ready for landlock_create_ruleset(2) and
// landlock_add_rule(2), reduced to what the kernel's ABI knows.
type Ruleset struct {
	HandledFS uint64
	Scoped    uint64
	Rules     []Rule
}

// Rule grants Access beneath Path. On a file only its AccessFile part
// applies.
type Rule struct {
	Path   string
	Access uint64
}

// Compile makes the ruleset of t for a kernel of the given ABI: rights the
// kernel does not know are neither handled nor granted (they cannot be
// enforced; StatusFor names them). Callers refuse ABIs below MinABI first.
func Compile(t Tiers, abi int) Ruleset {
	info := abiInfoOf(abi)
	r := Ruleset{HandledFS: info.fs, Scoped: info.scoped}
	add := func(access uint64, paths []string) {
		for _, p := range paths {
			r.Rules = append(r.Rules, Rule{Path: p, Access: access & r.HandledFS})
		}
	}
	add(read|AccessExecute|AccessRefer, t.ReadExec)
	add(read|AccessRefer, t.ReadOnly)
	add(read|write|AccessRefer|AccessIoctlDev, t.WriteNoExec)
	add(read|write|AccessExecute|AccessRefer|AccessIoctlDev, t.WriteExec)
	return r
}

// Nested is the ruleset that takes every filesystem right away and scopes
// abstract unix sockets: the sandbox's init adds it on top of the command's
// once the command runs, so that PID 1 itself can touch no file.
func Nested(abi int) Ruleset {
	info := abiInfoOf(abi)
	return Ruleset{HandledFS: info.fs, Scoped: ScopeAbstractUnixSocket & info.scoped}
}

// Tiers lists the paths of each access tier. Paths must exist when the ruleset is applied;
// a missing one is an error, so a typo never widens or narrows the policy silently.
type Tiers struct {
	ReadExec    []string `json:"read_exec"`
	ReadOnly    []string `json:"read_only"`
	WriteNoExec []string `json:"write_noexec"`
	WriteExec   []string `json:"write_exec"`
}

// Status describes the Landlock support of the running kernel.
type Status struct {
	ABI int // 0 when Landlock is unavailable
	// Downgrades lists rights the kernel cannot enforce at this ABI.
	Downgrades []string
}

// StatusFor reports what an ABI version can and cannot enforce.
func StatusFor(abi int) Status {
	s := Status{ABI: abi}
	for _, f := range abiInfos {
		if abi < f.version && f.adds != "" {
			s.Downgrades = append(s.Downgrades, fmt.Sprintf("landlock ABI %d lacks %s (needs ABI %d)", abi, f.adds, f.version))
		}
	}
	return s
}

// CheckABI returns an error naming the fix when abi is below MinABI.
func CheckABI(abi int) error {
	if abi == 0 {
		return errors.New("landlock is not enabled in this kernel; boot with lsm=landlock,... (Linux 6.2 or newer) and run 'stockade doctor'")
	}
	if abi < MinABI {
		return fmt.Errorf("landlock ABI %d is too old (stockade needs %d, Linux 6.2 or newer); upgrade the kernel", abi, MinABI)
	}
	return nil
}

// Paths returns every path named by the tiers, for existence checks.
func (t Tiers) Paths() []string {
	return slices.Concat(t.ReadExec, t.ReadOnly, t.WriteNoExec, t.WriteExec)
}
