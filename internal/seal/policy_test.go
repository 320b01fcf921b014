package seal

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/landlock"
)

// TestRuleset: levels become rights, the same path's entries add up, and a
// deny wins: an allow beneath it is dropped, an allow above it is split
// into its siblings (a symbolic link getting no rule of its own).
func TestRuleset(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/secret/deep", "a/b", "c"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "a/f"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "a/secret/s"), nil, 0o644)
	os.Symlink("secret", filepath.Join(dir, "a/link"))
	read, exec, write := landlock.Levels["read"], landlock.Levels["execute"], landlock.Levels["write"]
	tests := []struct {
		name  string
		allow []PathAccess
		deny  []DenyPath
		want  map[string]uint64
	}{
		{"levels add up", []PathAccess{{dir + "/c", "read"}, {dir + "/c/", "execute"}}, nil,
			map[string]uint64{dir + "/c": read | exec}},
		{"deny beneath an allow splits it", []PathAccess{{dir, "write"}}, []DenyPath{DenyPath(dir + "/a/secret")},
			map[string]uint64{dir + "/a/b": write, dir + "/a/f": write, dir + "/c": write}},
		{"allow beneath a deny is dropped", []PathAccess{{dir + "/a/secret/deep", "read"}, {dir + "/c", "read"}}, []DenyPath{DenyPath(dir + "/a")},
			map[string]uint64{dir + "/c": read}},
		{"deny of the allow itself", []PathAccess{{dir + "/c", "read"}}, []DenyPath{DenyPath(dir + "/c")},
			map[string]uint64{}},
		{"deny that does not exist", []PathAccess{{dir + "/a", "read"}}, []DenyPath{DenyPath(dir + "/a/none")},
			map[string]uint64{dir + "/a/b": read, dir + "/a/f": read, dir + "/a/secret": read}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Filesystem: &Filesystem{Allow: tt.allow, Deny: tt.deny}}
			rs, err := p.Ruleset(6)
			if err != nil {
				t.Fatal(err)
			}
			got := make(map[string]uint64)
			for _, r := range rs.Rules {
				got[r.Path] |= r.Access
			}
			if len(got) != len(tt.want) {
				t.Errorf("rules %v, want %v", got, tt.want)
			}
			for path, access := range tt.want {
				if got[path] != access {
					t.Errorf("%s: access %#x, want %#x (rules %v)", path, got[path], access, got)
				}
			}
		})
	}
}

// TestParse: every malformed policy is refused with a line naming what is
// wrong.
func TestParse(t *testing.T) {
	tests := []struct{ policy, err string }{
		{`{"filesystem": {"allow": [{"path": "/usr", "access": "read"}], "deny": ["/usr/x", {"path": "/usr/y"}]}}`, ""},
		{`{"filesystem": {"allow": []}, "syscalls": {"allow": ["read"], "defaultDeny": true}}`, ""},
		{`{"filesystem": {}} {}`, "data after the JSON object"},
		{`{"filesystem": {"allow": [{"path": "usr", "access": "read"}]}}`, `path "usr" is relative`},
		{`{"filesystem": {"allow": [{"path": "/usr", "access": "all"}]}}`, `filesystem.allow[0] (/usr): access "all"`},
		{`{"filesystem": {"deny": [{"paht": "/x"}]}}`, "filesystem.deny entry is a path"},
		{`{"filesystem": {"deny": [""]}}`, "filesystem.deny[0]: empty path"},
		{`{"filesystem": {}, "syscalls": {"allow": ["nope"], "defaultDeny": true}}`, `unknown system call "nope"`},
		{`{"filesystem": {}, "syscalls": {"allow": ["bpf"]}}`, `lists "bpf", which stockade's default profile refuses`},
		{`{"filesystem": {}, "syscalls": {"allow": ["bpf"], "defaultDeny": true}}`, ""},
		{strings.Repeat(" ", MaxPolicy+1), "at most"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.policy))
		if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Parse(%.60s) = %v, want %q", tt.policy, err, tt.err)
		}
	}
	if !slices.Equal(sortedKeys(landlock.Levels), []string{"execute", "read", "readwrite", "write"}) {
		t.Errorf("levels %v", sortedKeys(landlock.Levels))
	}
}

func sortedKeys(m map[string]uint64) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestRulesetUnsearchable: a deny beneath a directory this user cannot
// search needs no resolving to be kept out, and is no error.
func TestRulesetUnsearchable(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "locked", "x"), 0o755)
	os.Mkdir(filepath.Join(dir, "c"), 0o755)
	os.Chmod(filepath.Join(dir, "locked"), 0)
	defer os.Chmod(filepath.Join(dir, "locked"), 0o755)
	p := Policy{Filesystem: &Filesystem{Allow: []PathAccess{{dir + "/c", "read"}}, Deny: []DenyPath{DenyPath(dir + "/locked/x")}}}
	rs, err := p.Ruleset(6)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Rules) != 1 || rs.Rules[0].Path != dir+"/c" {
		t.Errorf("rules %v, want one on %s/c", rs.Rules, dir)
	}
}
