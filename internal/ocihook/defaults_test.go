package ocihook

import (
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestProcMasksInContainers: what the sandbox's /proc hides from the
// command, a container's /proc hides too (masked) or keeps read-only.
func TestProcMasksInContainers(t *testing.T) {
	for _, p := range mount.ProcMasks {
		p = strings.TrimSuffix(p, "/")
		if !slices.Contains(MaskedPaths, p) && !slices.Contains(ReadonlyPaths, p) {
			t.Errorf("%s is masked in the sandbox but neither masked nor read-only in a container (MaskedPaths)", p)
		}
	}
}
