package seccomp

import (
	"fmt"
	"slices"
)

// Classic BPF opcodes (include/uapi/linux/filter.h, bpf_common.h): only those
// the compiler emits, all of which the kernel's seccomp_check_filter accepts.
const (
	opLdAbsW = 0x20 // BPF_LD | BPF_W | BPF_ABS
	opAndK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
	opJa     = 0x05 // BPF_JMP | BPF_JA
	opJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	opJgtK   = 0x25 // BPF_JMP | BPF_JGT | BPF_K
	opJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	opJsetK  = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	opRetK   = 0x06 // BPF_RET | BPF_K

	// maxInstructions is BPF_MAXINSNS, the kernel's limit per filter.
	maxInstructions = 4096
	// maxJump is the reach of a conditional jump: jt and jf are 8 bits.
	maxJump = 255
)

// Offsets in struct seccomp_data (include/uapi/linux/seccomp.h). Arguments
// are 64-bit; both supported arches are little-endian, so the low half of
// args[i] comes first.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLow(i int) uint32  { return uint32(offArgs + 8*i) }
func argHigh(i int) uint32 { return uint32(offArgs + 8*i + 4) }

// Compile translates p into a seccomp BPF program for arch:
//
//	arch != arch's AUDIT_ARCH          -> KillProcess
//	x86_64: nr has the x32 bit         -> KillProcess (nr -1 excepted: it is a no-op)
//	a binary search on nr over the system calls p names, down to runs of
//	at most leafCalls of them, each tried in turn:
//	    nr == N ? try its rules in order, else the next
//	p.DefaultAction
//
// Names that arch never had (see arm64Absent) are skipped. Each system call
// has one block that ends in a return, and a call whose verdict does not
// depend on its arguments never loads one: the kernel then caches its
// verdict and never runs the filter for that call again. The search keeps
// what every call runs short, a dozen jumps for any number: the calls with
// conditions (ioctl, sendto, recvfrom, ...) run it at every call, and when
// the filter is loaded the kernel runs it once for every system call number
// to fill that cache, under a lock with interrupts off. A chain of
// comparisons in profile order cost the sandbox's start 0.1 ms there.
func Compile(p Profile, arch Arch) ([]Instruction, error) {
	info, ok := arches[arch]
	if !ok {
		return nil, fmt.Errorf("compiling seccomp filter for %v: %w", arch, ErrNotSupported)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("compiling seccomp filter for %v: %w", arch, err)
	}
	groups, err := groupByNumber(p, info)
	if err != nil {
		return nil, fmt.Errorf("compiling seccomp filter for %v: %w", arch, err)
	}

	prog := []Instruction{
		stmt(opLdAbsW, offArch),
		jump(opJeqK, info.auditArch, 1, 0),
		stmt(opRetK, uint32(KillProcess)),
		stmt(opLdAbsW, offNr),
	}
	if info.x32Bit != 0 {
		prog = append(prog,
			jump(opJgeK, info.x32Bit, 0, 2),
			jump(opJeqK, 0xffffffff, 1, 0),
			stmt(opRetK, uint32(KillProcess)))
	}
	blocks := make([]block, len(groups))
	for i, g := range groups {
		body, err := g.compile(p.DefaultAction)
		if err != nil {
			return nil, fmt.Errorf("compiling seccomp filter for %v: system call %s: %w", arch, g.name, err)
		}
		blocks[i] = block{nr: g.nr, body: body}
	}
	prog = append(prog, search(blocks, p.DefaultAction)...)
	if len(prog) > maxInstructions {
		return nil, fmt.Errorf("compiling seccomp filter for %v: %d instructions, the kernel accepts at most %d",
			arch, len(prog), maxInstructions)
	}
	return prog, nil
}

// leafCalls is the most system calls the search leaves to a chain of
// comparisons: below it, a comparison more in the chain costs less than a
// level more of the search.
const leafCalls = 4

// block is the compiled rules of one system call.
type block struct {
	nr   uint32
	body []Instruction
}

// search returns the code that finds nr among blocks, sorted by nr, and runs
// its block, or returns def when it is none of them. The accumulator holds
// nr on entry, and still does wherever the search jumps.
func search(blocks []block, def Action) []Instruction {
	if len(blocks) <= leafCalls {
		var out []Instruction
		for _, b := range blocks {
			// A body too long for the 8-bit false branch is entered
			// by the true branch and skipped by an unconditional jump.
			if len(b.body) <= maxJump {
				out = append(out, jump(opJeqK, b.nr, 0, uint8(len(b.body))))
			} else {
				out = append(out, jump(opJeqK, b.nr, 1, 0), stmt(opJa, uint32(len(b.body))))
			}
			out = append(out, b.body...)
		}
		return append(out, stmt(opRetK, uint32(def)))
	}
	mid := len(blocks) / 2
	below, above := search(blocks[:mid], def), search(blocks[mid:], def)
	var out []Instruction
	if len(below) <= maxJump {
		out = append(out, jump(opJgeK, blocks[mid].nr, uint8(len(below)), 0))
	} else {
		out = append(out, jump(opJgeK, blocks[mid].nr, 0, 1), stmt(opJa, uint32(len(below))))
	}
	return append(append(out, below...), above...)
}

// group is every rule for one system call number, in profile order.
type group struct {
	name  string
	nr    uint32
	rules []Rule
}

func groupByNumber(p Profile, info archInfo) ([]*group, error) {
	var groups []*group
	byNr := make(map[uint32]*group)
	for _, r := range p.Rules {
		for _, name := range r.Names {
			nr, ok := info.lookup(name)
			if !ok {
				if info.isAbsent(name) {
					continue
				}
				return nil, fmt.Errorf("no number for system call %q", name)
			}
			g := byNr[nr]
			if g == nil {
				g = &group{name: name, nr: nr}
				byNr[nr] = g
				groups = append(groups, g)
			}
			g.rules = append(g.rules, r)
		}
	}
	slices.SortFunc(groups, func(x, y *group) int {
		switch {
		case x.nr < y.nr:
			return -1
		case x.nr > y.nr:
			return 1
		}
		return 0
	})
	return groups, nil
}

// compile returns the block for one system call: each rule's conditions,
// then the rule's action; a failed condition jumps to the next rule; after the
// last rule, the default action. Every path ends in a return.
func (g *group) compile(def Action) ([]Instruction, error) {
	var a assembler
	for _, r := range g.rules {
		next := a.newLabel()
		for _, m := range r.Args {
			a.match(m, next)
		}
		// A single 32-bit condition jumps to next only from its one
		// comparison, so the accumulator holds there what it holds now.
		// (A 64-bit one may jump while holding either half.)
		after := a.acc
		a.emit(stmt(opRetK, uint32(r.Action)))
		a.bind(next)
		if len(r.Args) == 1 && r.Args[0].Width == Word32 {
			a.acc = after
		}
		if len(r.Args) == 0 {
			// Validate made this the last rule for the call; a default
			// return after it could never run.
			return a.finish()
		}
	}
	a.emit(stmt(opRetK, uint32(def)))
	return a.finish()
}

// match emits the test of m: it falls through when m holds and jumps to fail
// when it does not. A Word64 test looks at the high half first.
func (a *assembler) match(m ArgMatch, fail label) {
	pass := a.newLabel()
	lo, hi := uint32(m.Value), uint32(m.Value>>32)
	mlo, mhi := uint32(m.Mask), uint32(m.Mask>>32)
	wide := m.Width == Word64
	switch m.Op {
	case Equal:
		if wide {
			a.load(argHigh(m.Index))
			a.cond(opJeqK, hi, fallThrough, fail)
		}
		a.load(argLow(m.Index))
		a.cond(opJeqK, lo, fallThrough, fail)
	case NotEqual:
		if wide {
			a.load(argHigh(m.Index))
			a.cond(opJeqK, hi, fallThrough, pass)
		}
		a.load(argLow(m.Index))
		a.cond(opJeqK, lo, fail, fallThrough)
	case GreaterEqual:
		if wide {
			a.load(argHigh(m.Index))
			a.cond(opJgtK, hi, pass, fallThrough)
			a.cond(opJeqK, hi, fallThrough, fail)
		}
		a.load(argLow(m.Index))
		a.cond(opJgeK, lo, fallThrough, fail)
	case MaskedAny:
		// Value is the mask here; validate made sure it is not zero.
		if wide && hi != 0 {
			a.load(argHigh(m.Index))
			if lo == 0 {
				a.cond(opJsetK, hi, fallThrough, fail)
				break
			}
			a.cond(opJsetK, hi, pass, fallThrough)
		}
		if lo != 0 {
			a.load(argLow(m.Index))
			a.cond(opJsetK, lo, fallThrough, fail)
		}
	case MaskedEqual:
		// With no mask bits in the high half, that half is 0 == 0.
		if wide && mhi != 0 {
			a.loadMasked(argHigh(m.Index), mhi)
			a.cond(opJeqK, hi, fallThrough, fail)
		}
		a.loadMasked(argLow(m.Index), mlo)
		a.cond(opJeqK, lo, fallThrough, fail)
	}
	a.bind(pass)
}

func stmt(code uint16, k uint32) Instruction { return Instruction{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) Instruction {
	return Instruction{Code: code, Jt: jt, Jf: jf, K: k}
}
