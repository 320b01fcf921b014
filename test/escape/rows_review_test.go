package escape

import (
	"fmt"
	"os"
	"path/filepath"
)

// reviewRows: holes a red-team review of the planner found, each a row that
// failed before its fix.
var reviewRows = []row{
	// A name the command chose, in stockade's own exit report: printed
	// raw, "\x1b]52;c;…\a" in a workflow's file name set the user's
	// clipboard (the command's own output is filtered; the report was
	// not). Every message is written out with termfilter.Visible.
	{name: "report_name_terminal_escape", plainStderr: true,
		args: sh(`mkdir -p .github/workflows && printf x >".github/workflows/a$(printf '\033]52;c;SGVsbG8=\007')b.yml" && echo MADE`), want: "MADE"},
	// The command's last output to the user's terminal concealed what
	// followed (SGR 8) and switched to the alternate screen: the exit
	// report written after it, that a workflow was created, was there
	// but could not be seen. What the command's output left set is undone
	// before stockade reports (console.Settle), and undone again once the
	// alternate screen is left: leaving it restores the attributes saved
	// on entry, the concealment set just before.
	{name: "report_hidden_by_terminal_modes", shownAfter: "REVIEW: .github/workflows/a.yml",
		args: sh(`mkdir -p .github/workflows && echo x >.github/workflows/a.yml && printf '\033[8m\033[?1049h' >&2 && echo MADE`), want: "MADE"},
	// A scroll region of the first two lines, set by a sequence with more
	// parameters than the model of the terminal keeps (tmux acts on 24):
	// below it, each line of the report overwrote the one before.
	{name: "report_hidden_by_uncounted_region", shownAfter: "REVIEW: .github/workflows/a.yml",
		args: sh(`mkdir -p .github/workflows && echo x >.github/workflows/a.yml && printf '\033[1;2;0;0;0;0;0;0;0;0;0;0;0;0;0;0;0r\033[999;1H' >&2 && echo MADE`), want: "MADE"},
	// The cursor put back at the top of a screen the command filled with
	// padding and a forged end ("; expected, nothing to review"): the
	// report was written over the padding, and read as one line with it.
	{name: "report_forged_by_cursor_placement", shownAfter: "REVIEW: .github/workflows/a.yml",
		args: sh(`mkdir -p .github/workflows && echo x >.github/workflows/a.yml && printf '\033[2J\033[H%70s; expected, nothing to review\n\033[H' '' >&2 && echo MADE`), want: "MADE"},
	// A directory made unlistable (chmod 0311: names in it still open) used to
	// make the scan skip it, masks and protections included. Root lists it
	// anyway; an unprivileged user's next start refuses, naming it.
	// (needsRoot: the harness snapshots the fixture, which only root can list
	// then; the root pass runs the row for the unprivileged user too.)
	{name: "unlistable_dir_hides_secret", setup: files("work/apps/web/.env", "API_KEY=escape-test\n"), needsRoot: true,
		before: sh("chmod 0311 {work}/apps"),
		args:   probe("read", "{work}/apps/web/.env"), want: "DENIED EMPTY",
		refusedUser: "cannot list", refusedLate: true},
	// One directory made unlistable turned the exit check off for the
	// whole workdir: what the command created elsewhere at protected
	// names (an .mcp.json, a nested .claude/settings.json) stayed, and
	// the next start took it for the user's. The rest is checked, and
	// the directory named.
	{name: "unlistable_dir_keeps_quarantine", needsRoot: true,
		before:        sh("mkdir {work}/x {work}/y; chmod 0311 {work}/x; echo '{}' >{work}/y/.mcp.json"),
		beforeReports: "QUARANTINED: {work}/y/.mcp.json",
		args:          sh("test -e {work}/y/.mcp.json && echo PRESENT || echo GONE"), want: "GONE",
		refusedUser: "cannot list", refusedLate: true},
	// The project made writable by every user of the host (chmod 777 .,
	// a world-writable Makefile, a default ACL that gives every file made
	// later to everyone): another user puts a Makefile there, and the
	// user's next make runs it (a root supervisor's: as root). Where
	// others can reach the project (the fixtures' directories are 0755),
	// the end of the run takes back other users' write bits and ACLs set
	// during it.
	{name: "world_writable_left_in_workdir",
		before: sh(`chmod 777 {work}; chmod 666 {work}/main.c; mkdir {work}/w {work}/a; chmod 777 {work}/w; ` +
			`python3 -c "import os; os.setxattr('{work}/a', 'system.posix_acl_default', bytes([2,0,0,0, 1,0,7,0,255,255,255,255, 4,0,7,0,255,255,255,255, 32,0,7,0,255,255,255,255]))"`),
		beforeReports: "REMOVED: {work}/main.c",
		args:          sh(`echo $(stat -c %a {work} {work}/main.c {work}/w); python3 -c "import os; print('ACL' if 'system.posix_acl_default' in os.listxattr('{work}/a') else 'NOACL')"`),
		want:          "775 664 775\nNOACL"},
	// A masked secret's parent renamed into a directory the scan does not walk
	// (node_modules), to be read in the next session: the parents of masked
	// paths are pinned.
	{name: "rename_masked_parent_in_session", setup: files("work/apps/web/.env", "API_KEY=escape-test\n"),
		args: probe("rename", "{work}/apps/web", "{work}/apps/node_modules"), want: "DENIED EBUSY"},
	{name: "rename_masked_parent_then_read", setup: files("work/apps/web/.env", "API_KEY=escape-test\n"),
		before: sh("mv {work}/apps/web {work}/apps/node_modules 2>/dev/null; mv {work}/apps {work}/.git 2>/dev/null; true"),
		args:   sh("cat {work}/apps/web/.env {work}/apps/node_modules/.env {work}/.git/web/.env 2>/dev/null; echo END"), want: "END"},
	// A --ro tree in the project renamed away and a symlink put in its place,
	// which silenced the exit check: its parents are pinned.
	{name: "rename_ro_tree_parent", setup: files("work/a/docs/x.md", "x\n", "work/.stockade.json", `{"ro": ["a/docs"]}`+"\n"),
		args: probe("rename", "{work}/a", "{work}/a2"), want: "DENIED EBUSY"},
	// The middle link of a chain (.vscode -> mid -> real/vs) replaced to point
	// the editor's .vscode elsewhere: every link on the way is protected.
	{name: "link_chain_middle_replace", setup: hostFiles(without("work/.vscode"), files("work/real/vs/settings.json", "{}\n"),
		symlink("real/vs", "work/mid"), symlink("mid", "work/.vscode")),
		args: probe("unlink", "{work}/mid"), want: "DENIED EBUSY"},
	// Quarantine names the command could guess (its session ID is visible
	// inside) taken first, to keep its plant in place: the name has a random
	// part.
	{name: "quarantine_name_taken_first",
		args: sh("mkdir -p {work}/sub/.vscode && echo '{}' > {work}/sub/.vscode/tasks.json && " +
			"for i in '' -1 -2 -3 -4 -5 -6 -7 -8; do touch {work}/sub/.vscode.stockade-quarantine-$(hostname | cut -d- -f2)$i; done; echo DONE"),
		want: "DONE", check: gone("work/sub/.vscode")},
}

// gone checks that the command's file at rel is no longer at its name.
func gone(rel string) func(fx *fixture) error {
	return func(fx *fixture) error {
		if _, err := os.Lstat(filepath.Join(fx.base, rel)); err == nil {
			return fmt.Errorf("%s is still there after the sandbox ended", rel)
		}
		return nil
	}
}
