package sandbox

import "testing"

// TestDropMemory: init drops the supervisor's memory only in the build it
// is known safe in (static, no cgo, no race runtime, amd64).
func TestDropMemory(t *testing.T) {
	static := memoryFacts{arch: "amd64"}
	for _, tc := range []struct {
		name string
		f    memoryFacts
		drop bool
	}{
		{"static amd64", static, true},
		{"cgo", memoryFacts{arch: "amd64", cgo: true}, false},
		{"race", memoryFacts{arch: "amd64", race: true}, false},
		{"dynamic loader", memoryFacts{arch: "amd64", loaderBase: 0x7f0000000000}, false},
		{"auxv unknown", memoryFacts{arch: "amd64", loaderBase: ^uintptr(0)}, false},
		{"arm64", memoryFacts{arch: "arm64"}, false},
		{"unknown arch", memoryFacts{arch: "riscv64"}, false},
		{"everything", memoryFacts{arch: "arm64", cgo: true, race: true, loaderBase: 1}, false},
	} {
		drop, why := dropMemory(tc.f)
		if drop != tc.drop || (drop == (why != "")) {
			t.Errorf("%s: dropMemory(%+v) = %v, %q; want %v and a reason exactly when not", tc.name, tc.f, drop, why, tc.drop)
		}
	}
}

func TestAuxBase(t *testing.T) {
	for _, tc := range []struct {
		auxv [][2]uintptr
		want uintptr
	}{
		{nil, 0},
		{[][2]uintptr{{6, 4096}, {7, 0}, {9, 0x401000}}, 0},
		{[][2]uintptr{{6, 4096}, {7, 0x7fabc000}, {9, 0x401000}}, 0x7fabc000},
		{[][2]uintptr{{33, 0x7ffd000}, {25, 0x7ffe000}}, 0},
	} {
		if got := auxBase(tc.auxv); got != tc.want {
			t.Errorf("auxBase(%v) = %#x, want %#x", tc.auxv, got, tc.want)
		}
	}
}
