package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// startInit clones init into new namespaces, on a stack of its own in the
// program's arena, and returns its pid. Before it does anything else, init
// drops every anonymous page of the supervisor's it got with the clone
// except the arena's (program.zap): after a plain fork, each page the
// supervisor writes first would be copied for it, with a TLB shootdown to
// the other CPUs of its threads (in a VM, an exit per IPI).
//
//go:norace
//go:nocheckptr
func startInit(p *program, flags uintptr) (int, syscall.Errno) {
	p.nzap = zapList(&p.zap, p.arena)
	runtimeBeforeFork()
	pid, errno := cloneInit(flags|uintptr(syscall.SIGCHLD), p.stack, p)
	runtimeAfterFork()
	return int(pid), syscall.Errno(errno)
}

// cloneInit is in init_linux_amd64.s: clone(flags, stack), and in the child
// initEntry(p) on that stack.
func cloneInit(flags, stack uintptr, p *program) (pid, errno uintptr)

// initEntry is where init starts, on its own stack.
//
//go:nosplit
//go:norace
func initEntry(p *program) {
	p.initMain()
}

// zapList fills zap with the anonymous writable mappings of this process,
// less the arena's pages, and returns how many it filled.
func zapList(zap *[64]zapRange, keep []byte) int {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(keep))) &^ 4095
	hi := (uintptr(unsafe.Pointer(unsafe.SliceData(keep))) + uintptr(len(keep)) + 4095) &^ 4095
	n := 0
	add := func(start, end uintptr) {
		if end > start && n < len(zap) {
			zap[n] = zapRange{start, end - start}
			n++
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 || string(f[1]) != "rw-p" || string(f[4]) != "0" || (len(f) > 5 && string(f[5]) != "[heap]") {
			continue
		}
		se := bytes.SplitN(f[0], []byte("-"), 2)
		start, err1 := strconv.ParseUint(string(se[0]), 16, 64)
		end, err2 := strconv.ParseUint(string(se[1]), 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		s, e := uintptr(start), uintptr(end)
		if hi <= s || lo >= e {
			add(s, e)
			continue
		}
		add(s, lo)
		add(hi, e)
	}
	return n
}
