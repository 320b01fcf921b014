package slurm

import (
	"slices"
	"testing"
)

// TestHidden: every command the sandbox gets a shim for has its real
// binary hidden in each place one is installed, and the cluster's
// configuration and the munge key are hidden too.
func TestHidden(t *testing.T) {
	h := Hidden()
	for _, want := range []string{"/etc/slurm", "/etc/munge", "/usr/sbin/slurmd", "/usr/sbin/slurmd-wlm", "/usr/sbin/mungekey", "/usr/bin/munge", "/usr/lib/x86_64-linux-gnu/slurm-wlm"} {
		if !slices.Contains(h, want) {
			t.Errorf("Hidden lacks %s", want)
		}
	}
	for _, c := range Commands {
		for _, d := range hiddenDirs {
			if !slices.Contains(h, d+"/"+c) {
				t.Errorf("the shim %s has no Hidden entry for the real %s/%s", c, d, c)
			}
		}
	}
}
