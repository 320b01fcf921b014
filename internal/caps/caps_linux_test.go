//go:build linux

package caps

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestLastCap: the kernel's last capability is at least the ones this
// package was built knowing of; if it knew fewer, a capability beyond it
// would stay in the bounding set unnoticed.
func TestLastCap(t *testing.T) {
	if n := LastCap(); n < unix.CAP_BPF || n > 63 {
		t.Fatalf("LastCap() = %d, want between CAP_BPF (%d) and 63", n, unix.CAP_BPF)
	}
}
