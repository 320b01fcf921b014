package seccomp

import "slices"

//go:generate go test -run ^TestSandboxFilterGenerated$ -update-sandbox-filter .

// SandboxFilter returns Compile(Sandbox(), arch) without compiling it: the
// program was compiled when stockade was built (sandboxfilter_gen.go, static
// data the binary carries, which TestSandboxFilterGenerated keeps equal to
// what Compile makes). Compiling it at run time cost every start a tenth of
// a millisecond of a core and a few hundred allocations. The caller gets its
// own copy.
func SandboxFilter(arch Arch) ([]Instruction, error) {
	var prog []Instruction
	switch arch {
	case AMD64:
		prog = sandboxAMD64[:]
	case ARM64:
		prog = sandboxARM64[:]
	default:
		return Compile(Sandbox(), arch)
	}
	return slices.Clone(prog), nil
}

// SandboxLen is Sandbox().Len(), counted when stockade was built.
func SandboxLen() int { return sandboxLen }
