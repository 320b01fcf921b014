package policy

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// TestTables checks every built-in table: no duplicates, entries already in
// the form Pattern produces, relative, inside the workdir, globs only in the
// last element.
func TestTables(t *testing.T) {
	tables := map[string][]string{
		"defaultProtect": defaultProtect,
		"defaultMask":    defaultMask,
		"hookPaths":      hookPaths,
	}
	for name, table := range tables {
		seen := map[string]bool{}
		for _, e := range table {
			if seen[e] {
				t.Errorf("%s: duplicate %q", name, e)
			}
			seen[e] = true
			if path.IsAbs(e) || strings.Contains(e, "..") {
				t.Errorf("%s: %q must be relative and stay inside the workdir", name, e)
			}
			if c, err := Pattern(e); err != nil || c != e {
				t.Errorf("%s: %q normalizes to %q (%v)", name, e, c, err)
			}
		}
	}
	for _, h := range hookPaths {
		if !slices.Contains(defaultProtect, h) {
			t.Errorf("hook path %q is not protected by default", h)
		}
	}
	// Mask wins where both apply, so an entry in both is protected only
	// while it does not exist (a placeholder stops it being planted).
	bothOnPurpose := []string{".stockaderc"}
	for _, m := range defaultMask {
		if slices.Contains(defaultProtect, m) != slices.Contains(bothOnPurpose, m) {
			t.Errorf("%q: masked and protected = %v, want %v", m, slices.Contains(defaultProtect, m), slices.Contains(bothOnPurpose, m))
		}
	}
	if !slices.Contains(defaultProtect, ProjectFile) {
		t.Errorf("the project config %q must be protected", ProjectFile)
	}
	for _, k := range listKeys {
		if !slices.Contains(fileKeys, k) {
			t.Errorf("list key %q is not a file key", k)
		}
	}
	for _, k := range showKeys {
		if !slices.Contains(fileKeys, k) {
			t.Errorf("show key %q is not a file key", k)
		}
	}
	if len(showKeys) != len(fileKeys) {
		t.Errorf("showKeys has %d keys, fileKeys %d", len(showKeys), len(fileKeys))
	}
}

func TestDefault(t *testing.T) {
	p := Default("/w")
	want := map[string]bool{
		"workdir": p.Workdir == "/w",
		"log":     p.LogLevel == "warn",
		"network": p.Network == "proxy" && p.AgentPolicy == "deny" && len(p.AgentAllow) == 0,
		"pids":    p.Pids == 4096,
		"memory":  p.Memory == DefaultMemory && TmpfsBudget(p.Memory) == 4<<30,
		"cpus":    p.CPUs == 0,
		"hooks":   !p.AllowHooks,
		"protect": slices.Contains(p.Protect, ".git/hooks/") && slices.Contains(p.Protect, "CLAUDE.md"),
		"mask":    slices.Contains(p.Mask, ".env") && slices.Contains(p.Mask, ".ssh/"),
	}
	for what, ok := range want {
		if !ok {
			t.Errorf("Default: %s is wrong: %+v", what, p)
		}
	}
	p.Protect[0] = "changed"
	if defaultProtect[0] == "changed" {
		t.Error("Default shares its slice with the table")
	}
	if err := validLimits(p); err != nil {
		t.Error(err)
	}
}
