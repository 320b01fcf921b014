package sandbox

import (
	"slices"
	"testing"
)

// TestParseMappings: what init is cloned without is every private writable
// mapping but the arena and the kernel's own (the process stack with argv).
func TestParseMappings(t *testing.T) {
	maps := `00400000-00800000 r-xp 00000000 08:01 123 /usr/bin/stockade
00800000-00900000 r--p 00400000 08:01 123 /usr/bin/stockade
00900000-00950000 rw-p 00500000 08:01 123 /usr/bin/stockade
00950000-00980000 rw-p 00000000 00:00 0
01000000-01100000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000010000 rw-p 00000000 00:00 0
7f0000010000-7f0000020000 rw-p 00000000 00:00 0
7f0000020000-7f0000030000 rw-s 00000000 00:01 9 /dev/zero (deleted)
7f0000030000-7f0000040000 rw-p 00000000 00:00 0 [anon:glibc: malloc]
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
7ffc00100000-7ffc00102000 r--p 00000000 00:00 0 [vvar]
garbage line
zz-yy rw-p 00000000 00:00 0
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
`
	// The arena: the second of the two anonymous mappings at 7f00...
	got := parseMappings([]byte(maps), 0x7f0000010000, 0x7f0000020000)
	want := []mapping{
		{0x900000, 0x50000},       // the binary's data
		{0x950000, 0x30000},       // its BSS
		{0x1000000, 0x100000},     // [heap]
		{0x7f0000000000, 0x10000}, // a Go heap arena
		{0x7f0000030000, 0x10000}, // named anonymous memory
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMappings = %#x\nwant %#x", got, want)
	}
	// This process's own: the arena-to-be excluded, and nothing shared.
	live := privateMappings(0, 0)
	if len(live) == 0 {
		t.Fatal("privateMappings of this process found nothing")
	}
}
