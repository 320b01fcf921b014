package seccomp

import "fmt"

// label names a position in the program being assembled, so that forward
// jumps can be written before their target is known.
type label int

// fallThrough as a jump target means "the next instruction" (offset 0).
const fallThrough label = -1

// assembler builds one block of classic BPF with forward jumps to labels.
// Blocks are small (one system call's rules), so every jump must fit in the
// 8-bit jt/jf fields; finish reports one that does not rather than emit a
// wrong program.
type assembler struct {
	prog   []Instruction
	labels []int // label -> pc, -1 until bound
	fixups []fixup
	acc    accState
}

// accState is what the accumulator is known to hold on the straight path
// being emitted: the word at offset off of seccomp_data, ANDed with mask.
// A load or an AND that would leave it unchanged is not emitted, so a run of
// rules on the same argument loads it once: the ioctl rules, tried for every
// ioctl the agent makes, then cost one jump each.
type accState struct {
	known     bool
	off, mask uint32
}

const wholeWord = 0xffffffff

type fixup struct {
	pc     int
	jt, jf label
}

func (a *assembler) newLabel() label {
	a.labels = append(a.labels, -1)
	return label(len(a.labels) - 1)
}

// bind places l at the next instruction to be emitted. Jumps are forward
// only, so every jump to l is emitted by now; if there is one, the
// accumulator may hold something else when it arrives, and nothing is known
// about it any more (a caller that knows better sets a.acc after).
func (a *assembler) bind(l label) {
	a.labels[l] = len(a.prog)
	for _, f := range a.fixups {
		if f.jt == l || f.jf == l {
			a.acc = accState{}
			return
		}
	}
}

func (a *assembler) emit(ins Instruction) { a.prog = append(a.prog, ins) }

// load puts the 32-bit word at offset off of seccomp_data in the accumulator.
func (a *assembler) load(off uint32) {
	if want := (accState{known: true, off: off, mask: wholeWord}); a.acc != want {
		a.emit(stmt(opLdAbsW, off))
		a.acc = want
	}
}

// loadMasked puts the word at offset off, ANDed with mask, in the accumulator.
func (a *assembler) loadMasked(off, mask uint32) {
	if want := (accState{known: true, off: off, mask: mask}); a.acc != want {
		a.load(off)
		a.emit(stmt(opAndK, mask))
		a.acc = want
	}
}

// cond emits a conditional jump on the accumulator against k.
func (a *assembler) cond(code uint16, k uint32, jt, jf label) {
	a.fixups = append(a.fixups, fixup{pc: len(a.prog), jt: jt, jf: jf})
	a.emit(jump(code, k, 0, 0))
}

func (a *assembler) finish() ([]Instruction, error) {
	for _, f := range a.fixups {
		jt, err := a.offset(f.pc, f.jt)
		if err != nil {
			return nil, err
		}
		jf, err := a.offset(f.pc, f.jf)
		if err != nil {
			return nil, err
		}
		a.prog[f.pc].Jt, a.prog[f.pc].Jf = jt, jf
	}
	return a.prog, nil
}

// offset is the jump distance from the instruction at pc to l.
func (a *assembler) offset(pc int, l label) (uint8, error) {
	if l == fallThrough {
		return 0, nil
	}
	target := a.labels[l]
	d := target - pc - 1
	switch {
	case target < 0:
		return 0, fmt.Errorf("assembling: jump at %d to an unbound label", pc)
	case d < 0 || d > maxJump:
		return 0, fmt.Errorf("assembling: jump at %d spans %d instructions, classic BPF reaches 0..%d", pc, d, maxJump)
	}
	return uint8(d), nil
}
