// Package landlock is stockade's adapter over go-landlock: it turns the four
// access tiers of the sandbox (DESIGN §3 step 5) into one Landlock ruleset and
// enforces it on the calling process.
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
package landlock

import (
	"errors"
	"fmt"
	"slices"
)

// MinABI is the oldest Landlock ABI stockade accepts.
const MinABI = 3

// ErrNotSupported is returned where Landlock does not exist (non-Linux).
var ErrNotSupported = errors.New("landlock is not supported on this system")

// Tiers lists the paths of each access tier. Paths must exist when Restrict runs;
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

// abiFeatures is the table of what each ABI adds that stockade relies on.
var abiFeatures = []struct {
	abi  int
	what string
}{
	{3, "truncate control"},
	{4, "network rules (unused: the network namespace is the boundary)"},
	{5, "device ioctl control"},
	{6, "signal and abstract unix socket scoping"},
}

// StatusFor reports what an ABI version can and cannot enforce.
func StatusFor(abi int) Status {
	s := Status{ABI: abi}
	for _, f := range abiFeatures {
		if abi < f.abi && f.abi != 4 {
			s.Downgrades = append(s.Downgrades, fmt.Sprintf("landlock ABI %d lacks %s (needs ABI %d)", abi, f.what, f.abi))
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
