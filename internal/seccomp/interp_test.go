package seccomp

import (
	"encoding/binary"
	"fmt"
)

// seccompData is struct seccomp_data as the filter sees it.
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays d out as the kernel does on a little-endian machine.
func (d seccompData) bytes() [64]byte {
	var b [64]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(d.nr))
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// run executes a seccomp program over d the way the kernel does and returns
// the value of the RET that ends it. It accepts only the instructions the
// compiler emits, and applies the kernel's checks to them (aligned loads
// inside seccomp_data, forward jumps inside the program, a RET at the end),
// so a program it runs is one the kernel would also accept.
func run(prog []Instruction, d seccompData) (Action, error) {
	a, _, err := runCounting(prog, d)
	return a, err
}

// runCounting is run that also returns how many instructions it executed.
func runCounting(prog []Instruction, d seccompData) (Action, int, error) {
	if len(prog) == 0 || len(prog) > maxInstructions {
		return 0, 0, fmt.Errorf("program length %d", len(prog))
	}
	data := d.bytes()
	var acc uint32
	for pc, steps := 0, 1; pc < len(prog); steps++ {
		ins := prog[pc]
		next := pc + 1
		switch ins.Code {
		case opLdAbsW:
			if ins.K%4 != 0 || ins.K+4 > uint32(len(data)) {
				return 0, steps, fmt.Errorf("pc %d: load at offset %d", pc, ins.K)
			}
			acc = binary.LittleEndian.Uint32(data[ins.K:])
		case opAndK:
			acc &= ins.K
		case opRetK:
			return Action(ins.K), steps, nil
		case opJa:
			next += int(ins.K)
		case opJeqK, opJgtK, opJgeK, opJsetK:
			if cmp(ins.Code, acc, ins.K) {
				next += int(ins.Jt)
			} else {
				next += int(ins.Jf)
			}
		default:
			return 0, steps, fmt.Errorf("pc %d: opcode %#x not supported", pc, ins.Code)
		}
		if next >= len(prog) {
			return 0, steps, fmt.Errorf("pc %d: jump to %d leaves the program", pc, next)
		}
		pc = next
	}
	return 0, 0, fmt.Errorf("program ends without RET")
}

func cmp(code uint16, a, k uint32) bool {
	switch code {
	case opJeqK:
		return a == k
	case opJgtK:
		return a > k
	case opJgeK:
		return a >= k
	}
	return a&k != 0 // opJsetK
}
