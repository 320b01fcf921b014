package mount

import (
	"errors"
	"strings"
	"testing"
)

// TestEditExclude: the block is added at the end, replaced where it is,
// and removed with its marker lines; the user's lines around it are kept
// byte for byte; a file whose marker lines are not one pair is refused.
func TestEditExclude(t *testing.T) {
	const (
		b    = ExcludeBegin + "\n"
		e    = ExcludeEnd + "\n"
		user = "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n"
	)
	for _, tc := range []struct {
		name, in string
		lines    []string
		want     string
		odd      bool
	}{
		{name: "add to empty", lines: []string{"/.env"}, want: b + "/.env\n" + e},
		{name: "add before user lines", in: user, lines: []string{"/.env", "/CLAUDE.md"}, want: b + "/.env\n/CLAUDE.md\n" + e + user},
		{name: "add before a last line without newline", in: "*.log", lines: []string{"/.env"}, want: b + "/.env\n" + e + "*.log"},
		{name: "remove before a last line without newline", in: b + "/.env\n" + e + "*.log", want: "*.log"},
		{name: "nothing to add or remove", in: user, want: user},
		{name: "replace in place", in: user + b + "/.env\n" + e + "tmp/\n", lines: []string{"/CLAUDE.md"}, want: user + b + "/CLAUDE.md\n" + e + "tmp/\n"},
		{name: "remove", in: user + b + "/.env\n" + e, want: user},
		{name: "remove between user lines", in: user + b + "/.env\n" + e + "tmp/", want: user + "tmp/"},
		{name: "remove, end marker without newline", in: user + b + "/.env\n" + ExcludeEnd, want: user},
		{name: "remove an empty block", in: user + b + e, want: user},
		{name: "same again", in: user + b + "/.env\n" + e, lines: []string{"/.env"}, want: user + b + "/.env\n" + e},
		{name: "begin without end", in: user + b + "/.env\n*.o\n", lines: []string{"/.env"}, odd: true},
		{name: "begin without end, to remove", in: user + b + "/.env\n*.o\n", odd: true},
		{name: "end without begin", in: user + "/.env\n" + e, odd: true},
		{name: "end before begin", in: e + user + b, odd: true},
		{name: "two blocks", in: b + e + user + b + e, odd: true},
		{name: "two begins", in: b + user + b + e, odd: true},
		{name: "a marker with trailing space is a user line", in: user + ExcludeBegin + " \n", lines: []string{"/.env"},
			want: b + "/.env\n" + e + user + ExcludeBegin + " \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editExclude([]byte(tc.in), tc.lines)
			if tc.odd {
				if !errors.Is(err, errExcludeOdd) {
					t.Fatalf("editExclude = %q, %v; want it refused", got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("editExclude = %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

// TestExcludeBlocks: each work tree's block lists the placeholder files
// of the records in it, once each and sorted; directories, other work
// trees and placeholders in no work tree are left out.
func TestExcludeBlocks(t *testing.T) {
	rs := []record{
		{Placeholders: []Placeholder{
			{Path: "/p/CLAUDE.md", Top: "/p"},
			{Path: "/p/.vscode", Dir: true, Top: "/p"},
			{Path: "/q/.env", Top: "/q"},
			{Path: "/r/.env"},
		}},
		{Placeholders: []Placeholder{
			{Path: "/p/CLAUDE.md", Top: "/p", Borrowed: true},
			{Path: "/p/sub/.env", Top: "/p"},
			{Path: "/p/.git/config.worktree", Top: "/p"},
		}},
	}
	got := excludeBlocks([]string{"/p", "/s"}, rs)
	if len(got) != 2 || len(got["/s"]) != 0 {
		t.Fatalf("excludeBlocks = %q, want /p and an empty /s", got)
	}
	want := []string{"/CLAUDE.md", "/sub/.env"}
	if p := got["/p"]; len(p) != len(want) || p[0] != want[0] || p[1] != want[1] {
		t.Errorf("/p: %q, want %q", p, want)
	}
}

// TestExcludeBlocksLineBreak: a placeholder whose name holds a line break
// (a project file's protect pattern "x\n/notes/todo.txt", with a directory
// "x\n/notes" in the workdir) gets no line: gitignore cannot quote one, and
// what follows the break would be a pattern of its own, anchored at the
// top of the whole repository, hiding a path outside the workdir from the
// user's git status.
func TestExcludeBlocksLineBreak(t *testing.T) {
	rs := []record{{Placeholders: []Placeholder{
		{Path: "/p/sub/x\n/notes/todo.txt", Top: "/p"},
		{Path: "/p/sub/y\r\n/notes/b.txt", Top: "/p"},
		{Path: "/p/sub/ends\r", Top: "/p"},
		{Path: "/p/sub/CLAUDE.md", Top: "/p"},
	}}}
	got := excludeBlocks([]string{"/p"}, rs)["/p"]
	if len(got) != 1 || got[0] != "/sub/CLAUDE.md" {
		t.Errorf("block lines %q, want only /sub/CLAUDE.md", got)
	}
	if ex := GitExclude("/p", rs[0].Placeholders); strings.Contains(ex, "/notes/") || strings.Contains(ex, "\r") {
		t.Errorf("GitExclude names a path after a line break:\n%s", ex)
	}
}
