package seccomp

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestOCI: every rule of Default renders, with its conditions as libseccomp
// compares them, and nothing is allowed that Default denies outright.
func TestOCI(t *testing.T) {
	for _, arch := range Arches() {
		raw, err := OCI(Default(), arch)
		if err != nil {
			t.Fatalf("%v: %v", arch, err)
		}
		again, _ := OCI(Default(), arch)
		if !bytes.Equal(raw, again) {
			t.Errorf("%v: two renderings differ", arch)
		}
		var p ociProfile
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		if p.DefaultAction != "SCMP_ACT_ALLOW" || !slices.Equal(p.Architectures, []string{ociArch[arch]}) {
			t.Errorf("%v: default %s, architectures %v", arch, p.DefaultAction, p.Architectures)
		}
		// Every call Default denies whatever its arguments is denied here
		// without conditions, with the same errno.
		for _, r := range Default().Rules {
			if len(r.Args) > 0 {
				continue
			}
			e, _ := r.Action.Errno()
			for _, n := range r.Names {
				if _, ok := arches[arch].lookup(n); !ok {
					continue
				}
				if !slices.ContainsFunc(p.Syscalls, func(s ociSyscall) bool {
					return slices.Contains(s.Names, n) && len(s.Args) == 0 && s.Action == "SCMP_ACT_ERRNO" && *s.ErrnoRet == uint(e)
				}) {
					t.Errorf("%v: %s is not denied with errno %d", arch, n, e)
				}
			}
		}
	}
}

func TestOCIArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []ArgMatch
		want [][]ociArg
	}{
		{"32-bit equal compares the low half",
			[]ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: 0x5412}},
			[][]ociArg{{{1, 0xffffffff, 0x5412, "SCMP_CMP_MASKED_EQ"}}}},
		{"64-bit equal",
			[]ArgMatch{{Index: 0, Width: Word64, Op: Equal, Value: 7}},
			[][]ociArg{{{0, 7, 0, "SCMP_CMP_EQ"}}}},
		{"masked equal",
			[]ArgMatch{{Index: 2, Width: Word32, Op: MaskedEqual, Mask: 0o170000, Value: 0o020000}},
			[][]ociArg{{{2, 0o170000, 0o020000, "SCMP_CMP_MASKED_EQ"}}}},
		{"any of two bits is one entry per bit, with the other conditions in each",
			[]ArgMatch{{Index: 0, Width: Word64, Op: MaskedAny, Value: 0x5}, {Index: 1, Width: Word64, Op: NotEqual, Value: 0}},
			[][]ociArg{
				{{0, 1, 1, "SCMP_CMP_MASKED_EQ"}, {1, 0, 0, "SCMP_CMP_NE"}},
				{{0, 4, 4, "SCMP_CMP_MASKED_EQ"}, {1, 0, 0, "SCMP_CMP_NE"}},
			}},
		{"a second condition on the same argument is dropped: the entry denies more",
			[]ArgMatch{{Index: 0, Width: Word32, Op: NotEqual, Value: 0}, {Index: 0, Width: Word32, Op: NotEqual, Value: 0xffffffff}},
			[][]ociArg{{{0, 0, 0, "SCMP_CMP_NE"}}}},
		{"greater or equal",
			[]ArgMatch{{Index: 0, Width: Word32, Op: GreaterEqual, Value: 17}},
			[][]ociArg{{{0, 17, 0, "SCMP_CMP_GE"}}}},
	} {
		if got := ociArgs(c.in); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestOCIRefuses: a profile OCI cannot render faithfully is an error.
func TestOCIRefuses(t *testing.T) {
	for name, p := range map[string]Profile{
		"deny by default": {DefaultAction: EPERM, Rules: []Rule{{Names: []string{"read"}, Action: Allow}}},
	} {
		if _, err := OCI(p, AMD64); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

// TestOCIDropsExceptions: an allowing rule is dropped, so what it excepted
// from the rule after it is denied too.
func TestOCIDropsExceptions(t *testing.T) {
	p := Profile{DefaultAction: Allow, Rules: []Rule{
		{Names: []string{"ioctl"}, Args: []ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: 0x40049409}}, Action: Allow},
		{Names: []string{"ioctl"}, Args: []ArgMatch{{Index: 1, Width: Word32, Op: MaskedEqual, Mask: 0xff00, Value: 0x9400}}, Action: EPERM},
	}}
	raw, err := OCI(p, AMD64)
	if err != nil {
		t.Fatal(err)
	}
	var got ociProfile
	json.Unmarshal(raw, &got)
	if len(got.Syscalls) != 1 || got.Syscalls[0].Args[0] != (ociArg{1, 0xff00, 0x9400, "SCMP_CMP_MASKED_EQ"}) {
		t.Errorf("rendered %s", raw)
	}
}
