package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startInit clones init into new namespaces, where dropsMemory allows with
// next to none of the supervisor's memory: every private writable mapping
// but the program's arena and the process stack (argv and environment) is
// marked MADV_DONTFORK for the clone, so init gets no copy of the Go heap
// and stacks, nor of the binary's data and BSS (init reads no package-level
// variable). After a plain fork each page the supervisor writes first would
// be copied, with a TLB shootdown to the other CPUs running its threads (in
// a VM an exit per IPI); and the clone copies no page tables for them.
// Init starts on a stack in the arena (cloneInit), then with a thread
// pointer of its own, since the Go runtime's is gone from its memory;
// without the drop it keeps the thread pointer, and every mapping C code
// or a dynamic loader tied to the thread (glibc's rseq area, which the
// kernel writes on the clone's return to user space, is one).
//
//go:norace
//go:nocheckptr
func startInit(p *program, a *arena, flags uintptr) (int, syscall.Errno) {
	var ranges []mapping
	tls := uintptr(0)
	if dropsMemory() {
		ranges = privateMappings(a.bounds())
		tls = uintptr(unsafe.Pointer(&p.tls[1]))
	}
	// Go's own forks (os/exec) must not run with these marks: they take
	// ForkLock too.
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	for _, r := range ranges {
		syscall.RawSyscall(unix.SYS_MADVISE, r.start, r.len, unix.MADV_DONTFORK)
	}
	runtimeBeforeFork()
	pid, errno := cloneInit(flags|uintptr(syscall.SIGCHLD), p.stack, p, tls)
	runtimeAfterFork()
	for _, r := range ranges {
		syscall.RawSyscall(unix.SYS_MADVISE, r.start, r.len, unix.MADV_DOFORK)
	}
	return int(pid), syscall.Errno(errno)
}

// dropsMemory is dropMemory for this binary and process.
var dropsMemory = sync.OnceValue(func() bool {
	ok, _ := dropMemory(thisBinary())
	return ok
})

// initEntry is where init starts, on its own stack.
//
//go:nosplit
//go:norace
func initEntry(p *program) {
	p.initMain()
}

type mapping struct{ start, len uintptr }

// special reports whether a mapping named name is the kernel's (the
// process stack, which holds argv and the environment init overwrites),
// not the heap's or a named anonymous one's.
func special(name string) bool {
	return strings.HasPrefix(name, "[") && name != "[heap]" && !strings.HasPrefix(name, "[anon:")
}

// privateMappings are this process's private writable mappings (the Go
// heap, goroutine stacks, the binary's data and BSS) but for the one
// [lo, hi) and the process stack. The binary's data is one too: a page of
// it shared with init would be copied, with a TLB shootdown, at the
// supervisor's first write to it after the clone, and the runtime writes
// to many.
func privateMappings(lo, hi uintptr) []mapping {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	return parseMappings(maps, lo, hi)
}

// parseMappings is privateMappings of maps, the text of /proc/self/maps.
func parseMappings(maps []byte, lo, hi uintptr) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 || string(f[1]) != "rw-p" || (len(f) > 5 && special(string(f[5]))) {
			continue
		}
		se := bytes.SplitN(f[0], []byte("-"), 2)
		if len(se) != 2 {
			continue
		}
		start, err1 := strconv.ParseUint(string(se[0]), 16, 64)
		end, err2 := strconv.ParseUint(string(se[1]), 16, 64)
		if err1 != nil || err2 != nil || end <= start || (uintptr(start) < hi && uintptr(end) > lo) {
			continue
		}
		out = append(out, mapping{uintptr(start), uintptr(end - start)})
	}
	return out
}
