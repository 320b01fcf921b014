package bench

import (
	"math"
	"slices"
	"time"
)

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of ds by the nearest-rank
// method, so that every value it returns was actually measured. It returns 0
// for no samples.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Median is Quantile(ds, 0.5).
func Median(ds []time.Duration) time.Duration { return Quantile(ds, 0.5) }

// Ratio is a/b as a float, or NaN when b is zero, so that a missing reference
// can never read as a good result.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Millis is d in milliseconds, the unit the benchmarks report in.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
