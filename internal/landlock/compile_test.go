package landlock

import "testing"

// TestCompile: the ruleset handles only what the ABI knows, and no rule
// grants a right the ruleset does not handle (the kernel refuses that).
func TestCompile(t *testing.T) {
	tiers := Tiers{ReadExec: []string{"/usr"}, ReadOnly: []string{"/"}, WriteNoExec: []string{"/dev"}, WriteExec: []string{"/work"}}
	for _, tt := range []struct {
		abi             int
		handled, scoped uint64
	}{
		{3, 1<<15 - 1, 0},
		{5, 1<<16 - 1, 0},
		{6, 1<<16 - 1, ScopeAbstractUnixSocket | ScopeSignal},
		{7, 1<<16 - 1, ScopeAbstractUnixSocket | ScopeSignal},
	} {
		r := Compile(tiers, tt.abi)
		if r.HandledFS != tt.handled || r.Scoped != tt.scoped {
			t.Errorf("ABI %d: handled %#x scoped %#x, want %#x %#x", tt.abi, r.HandledFS, r.Scoped, tt.handled, tt.scoped)
		}
		if len(r.Rules) != 4 {
			t.Fatalf("ABI %d: %d rules, want 4", tt.abi, len(r.Rules))
		}
		for _, rule := range r.Rules {
			if rule.Access&^r.HandledFS != 0 {
				t.Errorf("ABI %d: rule %s grants %#x beyond what is handled", tt.abi, rule.Path, rule.Access)
			}
			if rule.Access&(AccessMakeChar|AccessMakeBlock) != 0 {
				t.Errorf("ABI %d: rule %s grants device creation", tt.abi, rule.Path)
			}
		}
		if got := r.Rules[1].Access; got&(AccessWriteFile|AccessExecute) != 0 {
			t.Errorf("ABI %d: read-only tier grants %#x", tt.abi, got)
		}
		if got := r.Rules[2].Access; got&AccessExecute != 0 || got&AccessWriteFile == 0 {
			t.Errorf("ABI %d: write_noexec tier grants %#x", tt.abi, got)
		}
		n := Nested(tt.abi)
		if len(n.Rules) != 0 || n.HandledFS != tt.handled || n.Scoped&ScopeSignal != 0 {
			t.Errorf("ABI %d: nested ruleset %+v", tt.abi, n)
		}
	}
}

// TestLevels: no level of a seal policy grants device creation, only
// execute grants Execute, and write implies read.
func TestLevels(t *testing.T) {
	for name, access := range Levels {
		if access&(AccessMakeChar|AccessMakeBlock) != 0 {
			t.Errorf("%s grants device creation", name)
		}
		if (access&AccessExecute != 0) != (name == "execute") {
			t.Errorf("%s: execute %v", name, access&AccessExecute != 0)
		}
		if access&read != read {
			t.Errorf("%s does not grant reading", name)
		}
	}
	if Levels["write"]&AccessWriteFile == 0 || Levels["write"] != Levels["readwrite"] {
		t.Errorf("write %#x readwrite %#x", Levels["write"], Levels["readwrite"])
	}
}
