package mount_test

import (
	"testing"

	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/policy"
)

// BenchmarkScanTrees: the scan of an empty project with the default
// patterns, which every `stockade run` pays twice (the plan at start, the
// check at exit).
func BenchmarkScanTrees(b *testing.B) {
	dir := b.TempDir()
	p := policy.Default(dir)
	cfg := mount.Config{Workdir: dir, Protect: p.Protect, Mask: p.Mask, Hold: policy.HeldMask, NoHold: policy.NoPlaceholders()}
	b.ReportAllocs()
	for b.Loop() {
		if sc := mount.ScanTrees(cfg, mount.OS{}); sc.Err != nil || len(sc.Missing) == 0 {
			b.Fatalf("scan: %v, %d missing", sc.Err, len(sc.Missing))
		}
	}
}
