package sandbox

import (
	"testing"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestReadyAt: init waits for the placeholders before the first step of
// any mount over one (its mount point is resolved, or made, on the host
// tree), and makes the mounts before it meanwhile.
func TestReadyAt(t *testing.T) {
	plan := mount.Plan{Mounts: []mount.Mount{
		{Kind: mount.Bind, Source: "/usr", Target: "/usr", ReadOnly: true, IsDir: true},
		{Kind: mount.Bind, Source: "/w", Target: "/w", IsDir: true, Strict: true},
		{Kind: mount.Empty, Target: "/etc/shadow"},
		{Kind: mount.Empty, Target: "/w/CLAUDE.md", Strict: true, Held: true},
		{Kind: mount.Empty, Target: "/w/.vscode", IsDir: true, Strict: true, Held: true},
		{Kind: mount.Empty, Target: "/w/.env", Strict: true},
	}}
	steps := mount.Steps(plan, "/tmp")
	at := readyAt(plan, steps)
	if at >= len(steps) {
		t.Fatalf("readyAt = %d of %d steps, want a step of a held mount", at, len(steps))
	}
	if m := steps[at].Mount; m < 0 || !plan.Mounts[m].Held {
		t.Errorf("step %d (%+v) is not of a held mount", at, steps[at])
	}
	for i, s := range steps[:at] {
		if s.Mount >= 0 && plan.Mounts[s.Mount].Held {
			t.Errorf("step %d (%+v) of a held mount comes before the wait", i, s)
		}
	}
	sawWorkdir := false
	for _, s := range steps[:at] {
		if s.Mount == 1 {
			sawWorkdir = true
		}
	}
	if !sawWorkdir {
		t.Error("the workdir is not bound before the wait: nothing of the plan overlaps the placeholders")
	}

	plan.Mounts[3].Held, plan.Mounts[4].Held = false, false
	if at := readyAt(plan, mount.Steps(plan, "/tmp")); at != len(mount.Steps(plan, "/tmp")) {
		t.Errorf("readyAt = %d with no held mount, want the end", at)
	}
}
