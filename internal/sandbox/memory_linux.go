//go:build linux

package sandbox

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// thisBinary are the memoryFacts of this binary and process. An auxiliary
// vector that cannot be read counts as a dynamic loader: not known safe.
func thisBinary() memoryFacts {
	f := memoryFacts{arch: runtime.GOARCH, cgo: cgoBuild, race: raceBuild}
	auxv, err := unix.Auxv()
	f.loaderBase = auxBase(auxv)
	if err != nil || len(auxv) == 0 {
		f.loaderBase = ^uintptr(0)
	}
	return f
}

// KeepsMemory reports whether this binary's sandbox init keeps a copy of
// the supervisor's memory (see dropMemory), and why: a loosening the start
// line names, since the copy holds the auth proxy's keys.
func KeepsMemory() (bool, string) {
	ok, why := dropMemory(thisBinary())
	return !ok, why
}
