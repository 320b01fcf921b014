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

// TestABIInfos: the ABI table is in order and cumulative, each right is
// first handled by the version the kernel added it in
// (include/uapi/linux/landlock.h), and the newest row handles every right
// and scope this package names.
func TestABIInfos(t *testing.T) {
	added := []struct {
		right, scope uint64
		version      int
	}{
		{right: fsV1, version: 1},
		{right: AccessRefer, version: 2},
		{right: AccessTruncate, version: 3},
		{right: AccessIoctlDev, version: 5},
		{scope: ScopeAbstractUnixSocket, version: 6},
		{scope: ScopeSignal, version: 6},
	}
	var all, allScopes uint64
	for _, a := range added {
		all |= a.right
		allScopes |= a.scope
	}
	var prev abiInfo
	for i, row := range abiInfos {
		if row.version != i+1 {
			t.Fatalf("row %d is ABI %d: one row per version, from 1, in order", i, row.version)
		}
		if row.fs&prev.fs != prev.fs || row.scoped&prev.scoped != prev.scoped {
			t.Errorf("ABI %d lacks rights of ABI %d: %#x %#x", row.version, prev.version, row.fs, row.scoped)
		}
		for _, a := range added {
			has := row.fs&a.right == a.right && row.scoped&a.scope == a.scope
			if has != (row.version >= a.version) {
				t.Errorf("ABI %d: handles %#x/%#x = %v, but that came with ABI %d", row.version, a.right, a.scope, has, a.version)
			}
		}
		if row.adds != "" && (row.version < MinABI || row.fs == prev.fs && row.scoped == prev.scoped) {
			t.Errorf("ABI %d: adds %q, but it is refused or adds no right", row.version, row.adds)
		}
		if abiInfoOf(row.version) != row {
			t.Errorf("abiInfoOf(%d) = %+v, want %+v", row.version, abiInfoOf(row.version), row)
		}
		prev = row
	}
	if prev.fs != all || prev.scoped != allScopes || all&AccessFile != AccessFile {
		t.Errorf("the newest ABI handles %#x and scopes %#x; this package names %#x and %#x", prev.fs, prev.scoped, all, allScopes)
	}
	if abiInfoOf(prev.version+5) != prev || abiInfoOf(0).fs != 0 || abiInfoOf(-1).fs != 0 {
		t.Error("a newer kernel does not get the newest row, or no Landlock gets rights")
	}
	if MinABI > len(abiInfos) {
		t.Errorf("MinABI %d has no row", MinABI)
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
