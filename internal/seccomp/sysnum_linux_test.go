package seccomp

import "testing"

// checkNumbers compares arch's table, and the extra numbers the test rows
// use, with want taken from x/sys/unix for the arch the test is built for.
func checkNumbers(t *testing.T, arch Arch, want map[string]uint32) {
	t.Helper()
	info := arches[arch]
	if len(info.numbers()) != len(want) {
		t.Errorf("%v table has %d names, unix has %d of them", arch, len(info.numbers()), len(want))
	}
	for name, nr := range want {
		if got, ok := info.lookup(name); !ok || got != nr {
			t.Errorf("%v: %s = %d (present %v), unix.SYS_* says %d", arch, name, got, ok, nr)
		}
	}
}
