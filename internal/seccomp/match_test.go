package seccomp

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
)

// want evaluates m over arg directly in Go: the reference the compiled BPF
// must agree with.
func (m ArgMatch) want(arg uint64) bool {
	if m.Width == Word32 {
		arg &= 0xffffffff
	}
	switch m.Op {
	case Equal:
		return arg == m.Value
	case NotEqual:
		return arg != m.Value
	case GreaterEqual:
		return arg >= m.Value
	case MaskedAny:
		return arg&m.Value != 0
	case MaskedEqual:
		return arg&m.Mask == m.Value
	}
	panic("unknown op")
}

// edges are values where a comparison split into two 32-bit halves goes wrong
// if a half is mishandled.
var edges = []uint64{
	0, 1, 2, 0x7f, 0x80, 0xffff, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
	1 << 32, 1<<32 | 1, 1<<32 | 0xffffffff, 2 << 32, 0xffffffff00000000, 0xfffffffeffffffff,
	0x8000000000000000, 0xffffffffffffffff, 0x100000080, 0x20000000_10000000,
}

// TestMatchAgreesWithGo compiles every op and width against every pair of
// edge values, in every argument slot, and compares the filter with want.
func TestMatchAgreesWithGo(t *testing.T) {
	ops := []Op{Equal, NotEqual, GreaterEqual, MaskedAny, MaskedEqual}
	for _, width := range []Width{Word32, Word64} {
		for _, op := range ops {
			for vi, v := range edges {
				m := ArgMatch{Index: vi % 6, Width: width, Op: op, Value: v}
				if op == MaskedEqual {
					m.Mask = edges[(vi+7)%len(edges)] | v
				}
				if m.validate() != nil {
					continue // too wide for Word32, or an empty mask
				}
				p := Profile{DefaultAction: Allow, Rules: []Rule{{Names: []string{"ioctl"}, Args: []ArgMatch{m}, Action: EPERM}}}
				for _, arch := range Arches() {
					prog, err := Compile(p, arch)
					if err != nil {
						t.Fatalf("%v %v: %v", arch, m, err)
					}
					nr, _ := arches[arch].lookup("ioctl")
					for _, arg := range edges {
						d := seccompData{nr: int32(nr), arch: arches[arch].auditArch}
						d.args[m.Index] = arg
						got, err := run(prog, d)
						if err != nil {
							t.Fatalf("%v %v: %v", arch, m, err)
						}
						if (got == EPERM) != m.want(arg) {
							t.Errorf("%v: width %d: %v with arg %#x: filter says %v", arch, width, m, arg, got)
						}
					}
				}
			}
		}
	}
}

// TestLongBody builds a block for one call longer than a conditional jump
// reaches, between two other calls, so Compile must skip it with BPF_JA.
func TestLongBody(t *testing.T) {
	const n = 200 // three instructions each: 600 > 255
	rules := []Rule{{Names: []string{"bpf"}, Action: EPERM}}
	for i := range n {
		rules = append(rules, Rule{Names: []string{"ioctl"}, Action: Errno(linuxEPERM + 1),
			Args: []ArgMatch{{Index: 1, Width: Word64, Op: Equal, Value: uint64(0x1000 + i)}}})
	}
	rules = append(rules, Rule{Names: []string{"ptrace"}, Action: EPERM})
	p := Profile{DefaultAction: Allow, Rules: rules}

	prog, err := Compile(p, AMD64)
	if err != nil {
		t.Fatal(err)
	}
	var jas int
	for _, ins := range prog {
		if ins.Code == opJa {
			jas++
		}
	}
	if jas != 1 {
		t.Errorf("program of %d instructions has %d BPF_JA, want 1", len(prog), jas)
	}
	enoent := Errno(linuxEPERM + 1)
	rows := []row{
		call("bpf", EPERM), call("ptrace", EPERM), call("getpid", Allow),
		call("ioctl", enoent, 0, 0x1000), call("ioctl", enoent, 0, 0x1000+n/2), call("ioctl", enoent, 0, 0x1000+n-1),
		call("ioctl", Allow, 0, 0x1000+n), call("ioctl", Allow, 0, hi1|0x1000), call("ioctl", Allow, 0, 0xfff),
	}
	runRows(t, p, rows)
}

// TestManyCalls denies every call the tables know, so the program is long
// and the last blocks sit far beyond a conditional jump from the start.
// (Those both arches have, but getpid and read.)
func TestManyCalls(t *testing.T) {
	var names []string
	for name := range arches[AMD64].numbers() {
		if _, ok := arches[ARM64].lookup(name); ok && name != "getpid" && name != "read" {
			names = append(names, name)
		}
	}
	p := Profile{DefaultAction: Allow, Rules: []Rule{{Names: names, Action: EPERM}}}
	rows := []row{call("getpid", Allow), call("read", Allow)}
	for _, name := range names {
		rows = append(rows, row{name: name, arches: amd64Only, want: EPERM})
	}
	runRows(t, p, rows)
}

// TestRuleRunsAgreeWithGo compiles random runs of rules for one call, where
// the compiler leaves out loads the accumulator already holds, and compares
// the filter with trying the rules in Go.
func TestRuleRunsAgreeWithGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []Op{Equal, NotEqual, GreaterEqual, MaskedAny, MaskedEqual}
	masks := []uint64{0xff00, 0xffff, 0xfff8, 0xffffffff, 0xffffffff00000000}
	randomMatch := func() ArgMatch {
		for {
			m := ArgMatch{Index: 1 + rng.IntN(2), Width: Word32, Op: ops[rng.IntN(len(ops))], Value: edges[rng.IntN(len(edges))]}
			if rng.IntN(4) == 0 {
				m.Width = Word64
			}
			if m.Op == MaskedEqual {
				m.Mask = masks[rng.IntN(len(masks))]
				m.Value &= m.Mask
			}
			if m.validate() == nil {
				return m
			}
		}
	}
	for range 2000 {
		var rules []Rule
		for i := range 1 + rng.IntN(8) {
			r := Rule{Names: []string{"ioctl"}, Action: Errno(syscall.Errno(2 + i))}
			for range 1 + rng.IntN(2) {
				r.Args = append(r.Args, randomMatch())
			}
			rules = append(rules, r)
		}
		p := Profile{DefaultAction: Allow, Rules: rules}
		if p.Validate() != nil {
			continue // a duplicate
		}
		for _, arch := range Arches() {
			prog, err := Compile(p, arch)
			if err != nil {
				t.Fatalf("%v %v: %v", arch, rules, err)
			}
			nr, _ := arches[arch].lookup("ioctl")
			for range 20 {
				d := seccompData{nr: int32(nr), arch: arches[arch].auditArch}
				d.args[1], d.args[2] = edges[rng.IntN(len(edges))], edges[rng.IntN(len(edges))]
				got, err := run(prog, d)
				if err != nil {
					t.Fatalf("%v %v: %v", arch, rules, err)
				}
				if want := firstMatch(rules, d.args); got != want {
					t.Fatalf("%v: rules %v, args %#x: filter says %v, want %v", arch, rules, d.args[1:3], got, want)
				}
			}
		}
	}
}

// firstMatch is the action of the first rule all of whose conditions hold.
func firstMatch(rules []Rule, args [6]uint64) Action {
	for _, r := range rules {
		if !slices.ContainsFunc(r.Args, func(m ArgMatch) bool { return !m.want(args[m.Index]) }) {
			return r.Action
		}
	}
	return Allow
}
