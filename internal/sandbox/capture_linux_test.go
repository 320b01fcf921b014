//go:build linux

package sandbox

import (
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCaptureOff: what init leaves in the shared page when the kernel
// refuses the capture rules or the route becomes the supervisor's warning.
func TestCaptureOff(t *testing.T) {
	tests := []struct {
		what  uint16
		errno unix.Errno
		want  string // "" for no error
	}{
		{0, 0, ""},
		{captureRules, unix.EOPNOTSUPP, "adding the nftables capture rules: operation not supported; the kernel needs nf_tables with nat and redirect"},
		{captureRules, unix.ENOENT, "nft_nat and nft_redir modules"},
		{captureRoute, unix.ENETDOWN, "adding the route through lo: network is down"},
	}
	for _, tt := range tests {
		a, err := newArena(4096)
		if err != nil {
			t.Fatal(err)
		}
		binary.NativeEndian.PutUint16(a.shared[4:], tt.what)
		binary.NativeEndian.PutUint16(a.shared[6:], uint16(tt.errno))
		err = a.captureOff()
		a.free()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%d %v: %v, want none", tt.what, tt.errno, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%d %v: %v, want one with %q", tt.what, tt.errno, err, tt.want)
		}
	}
}
