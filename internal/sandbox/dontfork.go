package sandbox

// memoryFacts are what decides whether init may be cloned without the
// supervisor's private memory (see dropMemory).
type memoryFacts struct {
	arch string // runtime.GOARCH
	// cgo: the binary was built with cgo, so C code (glibc) may keep
	// per-thread state the kernel writes to on every return to user space
	// (the rseq area, in the thread's TLS block) in a private mapping.
	cgo bool
	// race: the race detector's runtime (C code of its own, with shadow
	// memory) is linked in.
	race bool
	// loaderBase is AT_BASE of the auxiliary vector: non-zero when a
	// dynamic loader (ld.so) was mapped, which sets up TLS and rseq for
	// the main thread before Go starts (-buildmode=pie, -linkmode=external).
	loaderBase uintptr
}

// dropMemory reports whether init may be cloned with every private
// mapping but its arena marked MADV_DONTFORK, and if not, why not. The
// drop is an optimisation (no page copied, no page table cloned for the
// Go heap), and safe only where stockade knows every mapping init's thread
// needs: a static Go binary on amd64, whose only thread state is the Go
// runtime's, which init replaces (cloneInit). Anything else, init is
// cloned with a copy of all the supervisor's memory, as by fork(2).
func dropMemory(f memoryFacts) (bool, string) {
	switch {
	case f.arch != "amd64":
		return false, "init on " + f.arch + " runs on a copy of the supervisor's stack"
	case f.cgo:
		return false, "built with cgo: C keeps per-thread state (rseq, TLS) in private mappings"
	case f.race:
		return false, "built with -race: the race runtime keeps state in private mappings"
	case f.loaderBase != 0:
		return false, "a dynamic loader is mapped (AT_BASE non-zero): it set up TLS and rseq"
	}
	return true, ""
}

// auxBase is AT_BASE in auxv, the auxiliary vector as (tag, value) pairs,
// or 0.
func auxBase(auxv [][2]uintptr) uintptr {
	const atBase = 7 // AT_BASE in elf.h
	for _, kv := range auxv {
		if kv[0] == atBase {
			return kv[1]
		}
	}
	return 0
}
