package tripwire

import (
	"slices"
	"testing"
	"time"
)

var time0 = time.Unix(0, 0)

func TestCleanRoots(t *testing.T) {
	tests := []struct {
		in, want []string
		err      bool
	}{
		{in: []string{"/w/b", "/w/a/", "/w/b"}, want: []string{"/w/a", "/w/b"}},
		{in: []string{"/w/.git/hooks/pre-commit", "/w/.git/hooks", "/w/.git/hooks-x"}, want: []string{"/w/.git/hooks", "/w/.git/hooks-x"}},
		{in: []string{"/w/.claude/x", "/w/.claude-x", "/w/.claude"}, want: []string{"/w/.claude", "/w/.claude-x"}},
		{in: []string{"w/a"}, err: true},
	}
	for _, tt := range tests {
		got, err := cleanRoots(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("cleanRoots(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestCompareEntry(t *testing.T) {
	file := func(size int64, sum byte, mode uint32) *entry {
		return &entry{typ: typeRegular, size: size, sum: [32]byte{sum}, hashed: true, mode: mode}
	}
	tests := []struct {
		name     string
		was, now *entry
		want     []string // kinds
	}{
		{"same", file(3, 1, 0o644), file(3, 1, 0o644), nil},
		{"content", file(3, 1, 0o644), file(3, 2, 0o644), []string{Modified}},
		{"size", file(3, 1, 0o644), &entry{typ: typeRegular, size: 4, mode: 0o644}, []string{Modified}},
		{"mode and content", file(3, 1, 0o644), file(3, 2, 0o755), []string{Modified, ModeChanged}},
		{"owner", file(3, 1, 0o644), &entry{typ: typeRegular, size: 3, sum: [32]byte{1}, hashed: true, mode: 0o644, uid: 1}, []string{OwnerChanged}},
		{"created", nil, file(3, 1, 0o644), []string{Created}},
		{"removed", file(3, 1, 0o644), nil, []string{Removed}},
		{"replaced", file(3, 1, 0o644), &entry{typ: typeSymlink, target: "/etc"}, []string{Replaced}},
		{"symlink target", &entry{typ: typeSymlink, target: "a"}, &entry{typ: typeSymlink, target: "b"}, []string{Modified}},
		{"symlink mode ignored", &entry{typ: typeSymlink, target: "a", mode: 0o777}, &entry{typ: typeSymlink, target: "a"}, nil},
		{"unreadable", file(3, 1, 0o644), &entry{typ: typeRegular, size: 3, mode: 0o644, readErr: "EACCES"}, []string{Modified}},
	}
	for _, tt := range tests {
		var got []string
		for _, c := range compareEntry("/p", tt.was, tt.now) {
			got = append(got, c.Kind)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: kinds %q, want %q", tt.name, got, tt.want)
		}
	}
}
