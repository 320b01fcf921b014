package sandbox

import "testing"

// TestListenerCount: the Slurm chaperon's listener is made only for a
// spec that asks, and is the last, so the others keep their indexes.
func TestListenerCount(t *testing.T) {
	if Listeners[len(Listeners)-1].Name != "slurm" {
		t.Fatalf("the last listener is %q, not slurm", Listeners[len(Listeners)-1].Name)
	}
	for _, c := range []struct {
		spec Spec
		want int
	}{
		{Spec{}, 0}, {Spec{Slurm: true}, 0},
		{Spec{Listen: true}, len(Listeners) - 1}, {Spec{Listen: true, Slurm: true}, len(Listeners)},
	} {
		if got := listenerCount(c.spec); got != c.want {
			t.Errorf("listenerCount(listen %v, slurm %v) = %d, want %d", c.spec.Listen, c.spec.Slurm, got, c.want)
		}
	}
}
