package seccomp

import "slices"

//go:generate go test -run ^TestDefaultFilterGenerated$ -update-default-filter .

// DefaultFilter returns Compile(Default(), arch) without compiling it: the
// program was compiled when stockade was built (defaultfilter_gen.go, static
// data the binary carries, which TestDefaultFilterGenerated keeps equal to
// what Compile makes). Compiling it at run time cost every start a tenth of
// a millisecond of a core and a few hundred allocations. The caller gets its
// own copy.
func DefaultFilter(arch Arch) ([]Instruction, error) {
	var prog []Instruction
	switch arch {
	case AMD64:
		prog = defaultAMD64[:]
	case ARM64:
		prog = defaultARM64[:]
	default:
		return Compile(Default(), arch)
	}
	return slices.Clone(prog), nil
}

// DefaultLen is Default().Len(), counted when stockade was built.
func DefaultLen() int { return defaultLen }
