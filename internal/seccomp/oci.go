package seccomp

import (
	"encoding/json"
	"fmt"
	"math/bits"
)

// OCI renders p as the linux.seccomp object of an OCI runtime configuration
// for arch, the form a container runtime (crun, runc) loads with libseccomp:
// the profile of a container's own processes, those `podman exec` starts
// included. Only a profile that allows by default renders.
//
// libseccomp cannot say all that Compile's filter says, so the rendering
// denies more, never less:
//   - every matching rule has a say whatever its order, so an exception
//     (a rule that allows, before the rule that denies the rest: FICLONE
//     before the other btrfs ioctls) is dropped, and what it excepted is
//     denied;
//   - one entry compares an argument once (two comparisons of the same
//     argument match what neither does), so of several conditions on one
//     argument only the first is kept: personality is denied unless its
//     argument is PER_LINUX, its query form included;
//   - arguments compare at 64 bits: a Word32 condition compares the low
//     half through a mask where one exists (Equal, MaskedEqual, MaskedAny);
//     NotEqual and GreaterEqual stay 64-bit, and also deny a value whose
//     high half holds garbage.
//
// The rendering is stable: the same profile gives the same bytes.
func OCI(p Profile, arch Arch) ([]byte, error) {
	info, ok := arches[arch]
	if !ok {
		return nil, fmt.Errorf("rendering the OCI seccomp profile for %v: %w", arch, ErrNotSupported)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("rendering the OCI seccomp profile: %w", err)
	}
	if p.DefaultAction != Allow {
		return nil, fmt.Errorf("rendering the OCI seccomp profile: default action %v, want allow", p.DefaultAction)
	}
	out := ociProfile{DefaultAction: "SCMP_ACT_ALLOW", Architectures: []string{ociArch[arch]}}
	for i, r := range p.Rules {
		if r.Action == Allow {
			continue
		}
		action, errno, err := ociAction(r.Action)
		if err != nil {
			return nil, fmt.Errorf("rendering the OCI seccomp profile: rule %d: %w", i, err)
		}
		var names []string
		for _, n := range r.Names {
			if _, ok := info.lookup(n); ok {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		for _, args := range ociArgs(r.Args) {
			out.Syscalls = append(out.Syscalls, ociSyscall{Names: names, Action: action, ErrnoRet: errno, Args: args})
		}
	}
	return json.Marshal(out)
}

// ociArch names each Arch as libseccomp does.
var ociArch = map[Arch]string{AMD64: "SCMP_ARCH_X86_64", ARM64: "SCMP_ARCH_AARCH64"}

// The OCI seccomp types (runtime-spec config-linux.md), with the field
// names and omissions of its Go package, so that a runtime configuration
// an engine re-encodes compares equal to this one.
type ociProfile struct {
	DefaultAction string       `json:"defaultAction"`
	Architectures []string     `json:"architectures,omitempty"`
	Syscalls      []ociSyscall `json:"syscalls,omitempty"`
}

type ociSyscall struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []ociArg `json:"args,omitempty"`
}

type ociArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

func ociAction(a Action) (string, *uint, error) {
	if a == KillProcess {
		return "SCMP_ACT_KILL_PROCESS", nil, nil
	}
	if e, ok := a.Errno(); ok {
		n := uint(e)
		return "SCMP_ACT_ERRNO", &n, nil
	}
	return "", nil, fmt.Errorf("action %v: only denials render", a)
}

// ociArgs turns the conditions of one rule (all must hold) into the
// argument lists of OCI entries (any may match): one list, unless a
// MaskedAny condition spreads over several bits, which libseccomp can only
// test one at a time. Of several conditions on one argument the first is
// kept (see OCI).
func ociArgs(ms []ArgMatch) [][]ociArg {
	lists := [][]ociArg{nil}
	seen := map[int]bool{}
	for _, m := range ms {
		if seen[m.Index] {
			continue
		}
		seen[m.Index] = true
		var alts []ociArg
		idx := uint(m.Index)
		low := uint64(1<<32 - 1)
		switch m.Op {
		case Equal:
			if m.Width == Word32 {
				alts = []ociArg{{idx, low, m.Value, "SCMP_CMP_MASKED_EQ"}}
			} else {
				alts = []ociArg{{idx, m.Value, 0, "SCMP_CMP_EQ"}}
			}
		case NotEqual:
			alts = []ociArg{{idx, m.Value, 0, "SCMP_CMP_NE"}}
		case GreaterEqual:
			alts = []ociArg{{idx, m.Value, 0, "SCMP_CMP_GE"}}
		case MaskedEqual:
			alts = []ociArg{{idx, m.Mask, m.Value, "SCMP_CMP_MASKED_EQ"}}
		case MaskedAny:
			for v := m.Value; v != 0; v &= v - 1 {
				bit := uint64(1) << bits.TrailingZeros64(v)
				alts = append(alts, ociArg{idx, bit, bit, "SCMP_CMP_MASKED_EQ"})
			}
		}
		var next [][]ociArg
		for _, l := range lists {
			for _, a := range alts {
				next = append(next, append(append([]ociArg{}, l...), a))
			}
		}
		lists = next
	}
	return lists
}
