package bench

import (
	"math"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range v {
			ds = append(ds, time.Duration(x)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		name string
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.9, 7 * time.Millisecond},
		{"odd median", ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{"even median is the lower middle", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p90 of ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
		{"p0 is the minimum", ms(5, 3, 9), 0, 3 * time.Millisecond},
		{"p100 is the maximum", ms(5, 3, 9), 1, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			if got := Quantile(tt.in, tt.q); got != tt.want {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tt.in, tt.q, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatalf("Quantile reordered its input: %v", tt.in)
				}
			}
		})
	}
}

func TestRatioOfZeroIsNaN(t *testing.T) {
	if r := Ratio(time.Second, 0); !math.IsNaN(r) {
		t.Errorf("Ratio(1s, 0) = %v, want NaN", r)
	}
	if r := Ratio(3*time.Second, 2*time.Second); r != 1.5 {
		t.Errorf("Ratio(3s, 2s) = %v, want 1.5", r)
	}
}
