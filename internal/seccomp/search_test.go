package seccomp

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
)

// linearCompile is Compile as it was before the binary search (commit
// 78d6f73): after the same prologue, one comparison of nr per system call,
// in profile order with the calls that have conditions first, then the
// default. TestSearchAgreesWithChain holds the search to its verdicts.
func linearCompile(t *testing.T, p Profile, arch Arch) []Instruction {
	t.Helper()
	info := arches[arch]
	groups, err := groupByNumber(p, info)
	if err != nil {
		t.Fatal(err)
	}
	// The order the chain had: first appearance in the profile, the
	// calls with conditions first.
	first := map[uint32]int{}
	i := 0
	for _, r := range p.Rules {
		for _, name := range r.Names {
			if nr, ok := info.lookup(name); ok {
				if _, seen := first[nr]; !seen {
					first[nr] = i
					i++
				}
			}
		}
	}
	conditional := func(g *group) bool {
		for _, r := range g.rules {
			if len(r.Args) > 0 {
				return true
			}
		}
		return false
	}
	ordered := make([]*group, len(groups))
	copy(ordered, groups)
	for a := 1; a < len(ordered); a++ { // insertion sort: stable
		for b := a; b > 0; b-- {
			x, y := ordered[b-1], ordered[b]
			cx, cy := conditional(x), conditional(y)
			if cx == cy && first[x.nr] < first[y.nr] || cx && !cy {
				break
			}
			ordered[b-1], ordered[b] = y, x
		}
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
	for _, g := range ordered {
		body, err := g.compile(p.DefaultAction)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) <= maxJump {
			prog = append(prog, jump(opJeqK, g.nr, 0, uint8(len(body))))
		} else {
			prog = append(prog, jump(opJeqK, g.nr, 1, 0), stmt(opJa, uint32(len(body))))
		}
		prog = append(prog, body...)
	}
	return append(prog, stmt(opRetK, uint32(p.DefaultAction)))
}

// argVectors are the arguments tried with every system call number: zeros,
// ones, and each constant a rule of p compares with, and its neighbours, in
// every argument position.
func argVectors(p Profile) [][6]uint64 {
	vals := map[uint64]bool{0: true, ^uint64(0): true, 1 << 32: true, 0xffffffff: true}
	for _, r := range p.Rules {
		for _, m := range r.Args {
			for _, v := range []uint64{m.Value, m.Value + 1, m.Value - 1, m.Value ^ 1<<32, m.Value | 0xffffffff00000000,
				m.Value & m.Mask, m.Mask, ^m.Value, m.Value &^ (m.Value & -m.Value)} {
				vals[v] = true
			}
		}
	}
	var out [][6]uint64
	out = append(out, [6]uint64{})
	for v := range vals {
		for i := range 6 {
			var a [6]uint64
			a[i] = v
			out = append(out, a)
		}
		out = append(out, [6]uint64{v, v, v, v, v, v})
	}
	return out
}

// compareWithChain runs both programs for every system call number up to
// past the highest the arch has, the numbers around the x32 bit, -1, and
// the foreign arch, with args.
func compareWithChain(t *testing.T, name string, p Profile, arch Arch, args [][6]uint64) {
	t.Helper()
	old := linearCompile(t, p, arch)
	prog, err := Compile(p, arch)
	if err != nil {
		t.Fatalf("%s: Compile(%v): %v", name, arch, err)
	}
	info := arches[arch]
	var nrs []uint32
	maxNr := uint32(0)
	for _, nr := range info.numbers() {
		maxNr = max(maxNr, nr)
	}
	for nr := uint32(0); nr <= maxNr+16; nr++ {
		nrs = append(nrs, nr)
	}
	nrs = append(nrs, 0x3fffffff, 0x40000000, 0x40000001, 0x40000000+1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff)
	errs := 0
	for _, audit := range []uint32{info.auditArch, 0xc000003e ^ 0xc00000b7 ^ info.auditArch} {
		for _, nr := range nrs {
			for j, a := range args {
				if audit != info.auditArch && j > 0 {
					break // killed before the arguments matter
				}
				d := seccompData{nr: int32(nr), arch: audit, args: a}
				want, err := run(old, d)
				if err != nil {
					t.Fatalf("%s: %v: the chain, nr %#x: %v", name, arch, nr, err)
				}
				got, err := run(prog, d)
				if err != nil || got != want {
					t.Errorf("%s: %v: nr %#x args %#x: search %v (%v), chain %v", name, arch, nr, a, got, err, want)
					if errs++; errs > 20 {
						t.FailNow()
					}
				}
			}
		}
	}
}

// TestSearchAgreesWithChain holds Compile's binary search to the verdicts of
// the chain of comparisons it replaced, for every system call number and a
// set of arguments, on both arches: the default profile, a profile that
// names every call, one with bodies longer than a jump reaches, and random
// ones.
func TestSearchAgreesWithChain(t *testing.T) {
	def := Default()
	defArgs := argVectors(def)
	for _, arch := range Arches() {
		compareWithChain(t, "default", def, arch, defArgs)
	}

	var every []string
	for name := range arches[AMD64].numbers() {
		if _, ok := arches[ARM64].lookup(name); ok && name != "getpid" {
			every = append(every, name)
		}
	}
	all := Profile{DefaultAction: Allow, Rules: []Rule{{Names: every, Action: EPERM}}}
	for _, arch := range Arches() {
		compareWithChain(t, "every call", all, arch, [][6]uint64{{}})
	}

	// Random profiles: a few calls with long runs of conditions (bodies
	// past 255 instructions, and subtrees past it), many without.
	rng := rand.New(rand.NewPCG(7, 8))
	names := every
	slices.Sort(names)
	compared := 0
	defer func() {
		if compared < 12 {
			t.Errorf("only %d random profiles compiled", compared)
		}
	}()
	for i := range 24 {
		p := Profile{DefaultAction: []Action{Allow, EPERM, KillProcess}[i%3]}
		for range 1 + rng.IntN(6) {
			name := names[rng.IntN(len(names))]
			n := []int{1, 60, 126, 127, 128, 200}[rng.IntN(6)]
			index, width := rng.IntN(6), []Width{Word32, Word64}[rng.IntN(2)]
			for k := range n {
				v := uint64(k) + 7
				if width == Word64 && k%2 == 1 {
					v <<= 32
				}
				p.Rules = append(p.Rules, Rule{Names: []string{name}, Action: Errno(syscall.Errno(1 + k%30)),
					Args: []ArgMatch{{Index: index, Width: width, Op: Equal, Value: v}}})
			}
		}
		seen := map[string]bool{}
		for _, r := range p.Rules {
			seen[r.Names[0]] = true
		}
		var plain []string
		for range rng.IntN(300) {
			if name := names[rng.IntN(len(names))]; !seen[name] {
				seen[name] = true
				plain = append(plain, name)
			}
		}
		if len(plain) > 0 {
			p.Rules = append(p.Rules, Rule{Names: plain, Action: EPERM})
		}
		if err := p.Validate(); err != nil {
			continue // a duplicate rule drawn twice
		}
		if _, err := Compile(p, AMD64); err != nil {
			continue // too long for the kernel
		}
		args := argVectors(p)
		if len(args) > 40 {
			args = args[:40]
		}
		for _, arch := range Arches() {
			compareWithChain(t, "random", p, arch, args)
		}
		compared++
	}
}

// TestSearchJumps runs search on made-up blocks whose lengths put a
// subtree or a body at exactly the reach of a conditional jump, one short
// of it and one past it, and checks every number finds its own block.
func TestSearchJumps(t *testing.T) {
	const def = Action(0x7fff0000)
	lengths := []int{1, 2, 100, 125, 126, 127, 252, 253, 254, 255, 256, 257, 400}
	rng := rand.New(rand.NewPCG(3, 4))
	var jgeAt255, jgeFar, eqAt255, eqFar bool
	check := func(lens []int) {
		blocks := make([]block, len(lens))
		for i, n := range lens {
			body := make([]Instruction, 0, n)
			for range n - 1 {
				body = append(body, stmt(opLdAbsW, offNr))
			}
			blocks[i] = block{nr: uint32(10 + 3*i), body: append(body, stmt(opRetK, uint32(0x10000+i)))}
		}
		prog := append([]Instruction{stmt(opLdAbsW, offNr)}, search(blocks, def)...)
		if len(prog) > maxInstructions {
			return
		}
		for i, ins := range prog {
			switch {
			case ins.Code == opJgeK && ins.Jt == maxJump:
				jgeAt255 = true
			case ins.Code == opJgeK && ins.Jt == 0 && ins.Jf == 1 && prog[i+1].Code == opJa && prog[i+1].K > maxJump:
				jgeFar = true
			case ins.Code == opJeqK && ins.Jf == maxJump:
				eqAt255 = true
			case ins.Code == opJeqK && ins.Jt == 1 && prog[i+1].Code == opJa && prog[i+1].K > maxJump:
				eqFar = true
			}
		}
		for nr := uint32(0); nr < uint32(10+3*len(lens)+5); nr++ {
			want := def
			if nr >= 10 && (nr-10)%3 == 0 && int(nr-10)/3 < len(lens) {
				want = Action(0x10000 + (nr-10)/3)
			}
			got, err := run(prog, seccompData{nr: int32(nr)})
			if err != nil || got != want {
				t.Fatalf("blocks of lengths %v: nr %d: %#x (%v), want %#x", lens, nr, uint32(got), err, uint32(want))
			}
		}
	}
	// Two blocks below a split of five: 1+a + 1+b + 1 instructions.
	for _, ab := range [][2]int{{126, 126}, {126, 127}, {127, 127}, {1, 251}, {1, 252}, {1, 253}} {
		check([]int{ab[0], ab[1], 1, 1, 1})
	}
	for range 3000 {
		lens := make([]int, 1+rng.IntN(20))
		for i := range lens {
			lens[i] = lengths[rng.IntN(len(lengths))]
		}
		check(lens)
	}
	if !jgeAt255 || !jgeFar || !eqAt255 || !eqFar {
		t.Errorf("cases not reached: split jumping 255 %v, split past it %v, body of 255 %v, body past it %v",
			jgeAt255, jgeFar, eqAt255, eqFar)
	}
}
