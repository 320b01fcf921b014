package mount

import (
	"strings"
	"testing"
)

func TestGitExclude(t *testing.T) {
	ps := []Placeholder{
		{Path: "/p/CLAUDE.md"},
		{Path: "/p/.vscode", Dir: true},
		{Path: "/p/sub/#odd *name?"},
		{Path: "/p/.git/config.worktree"},
		{Path: "/elsewhere/.env"},
		{Path: "/p"},
	}
	got := GitExclude("/p", ps)
	want := "# stockade: the placeholders of protected paths this sandbox holds.\n" +
		"/CLAUDE.md\n/.vscode/\n/sub/\\#odd\\ \\*name\\?\n"
	if got != want {
		t.Errorf("GitExclude:\n%s\nwant:\n%s", got, want)
	}
	// A name that is not UTF-8 is named byte for byte, not with U+FFFD.
	if got, want := GitExclude("/p", []Placeholder{{Path: "/p/a\xff b"}}), "/a\xff\\ b\n"; !strings.HasSuffix(got, "\n"+want) {
		t.Errorf("GitExclude of a name that is not UTF-8: %q, want it to end in %q", got, want)
	}
	if got := GitExclude("/p", []Placeholder{{Path: "/p/.git/config.worktree"}}); got != "" {
		t.Errorf("only .git placeholders: %q, want none", got)
	}
}
