package escape

import (
	"os"
	"path/filepath"
)

// linkRows: symlinks and hard links in the trees the sandbox writes. An earlier
// session (the row's `before` run, or the fixture standing for it) plants a link
// where stockade later protects or masks a path; the next session must neither
// mount what the link leads to on the host (the real HOME's ~/.aws, another
// repository's .git) nor leave the link's target writable or readable. The
// fixture's {home} is the user's real HOME on the host, and inside the sandbox
// the same path is the sandbox HOME: a relative link from the project to
// ../home/... names the real one on the host and the sandbox's inside.
var linkRows = []row{
	// The red-team reproduction: .git -> ~/.aws in a project without .git, and a
	// matching ~/.aws/config in the sandbox HOME. The protected .git/config
	// used to bind the host's ~/.aws (its parent, pinned) read-write inside.
	{name: "link_parent_git_to_home_aws", setup: hostFiles(without("work/.git"), files("home/.aws/config", "[default]\n")),
		before: sh("ln -s ../home/.aws .git && mkdir -p $HOME/.aws && touch $HOME/.aws/config"),
		args:   probe("read", "{home}/.aws/credentials"), want: "DENIED ENOENT"},
	{name: "link_parent_git_to_home_aws_write", setup: hostFiles(without("work/.git"), files("home/.aws/config", "[default]\n")),
		before: sh("ln -s ../home/.aws .git && mkdir -p $HOME/.aws && touch $HOME/.aws/config"),
		args:   sh("echo x > $HOME/.aws/planted && cat {home}/.aws/config && echo DONE"), want: "DONE"},
	// The same through a protected file of the link's target directory: a link
	// left from before (the fixture plants it), and one the first run plants,
	// which the end of that run moves aside.
	{name: "link_parent_cursor_to_home", setup: hostFiles(files("home/.cursor/mcp.json", `{"mcpServers":{"real":{}}}`+"\n"),
		homeFiles(".cursor/mcp.json", "{}\n"), symlink("../home/.cursor", "work/.cursor")),
		args: sh("cat {work}/.cursor/mcp.json"), want: "{}"},
	{name: "link_parent_github_planted", setup: hostFiles(files("home/.ghx/copilot-instructions.md", "the user's own\n")),
		before: sh("ln -s ../home/.ghx .github && mkdir -p $HOME/.ghx && echo mine > $HOME/.ghx/copilot-instructions.md"),
		args:   probe("read", "{work}/.github/copilot-instructions.md"), want: "DENIED ENOENT", check: quarantined("work/.github")},
	// Another repository's .git, through a link into the sandbox HOME's path.
	{name: "link_parent_git_to_other_repo", setup: hostFiles(without("work/.git"), files("home/repo/.git/config", "[core]\n", "home/repo/.git/hooks/pre-commit", "#!/bin/sh\n")),
		before: sh("ln -s ../home/repo/.git .git && mkdir -p $HOME/repo/.git/hooks && touch $HOME/repo/.git/config"),
		args:   probe("read", "{home}/repo/.git/hooks/pre-commit"), want: "DENIED ENOENT"},
	// A protected name that is a symlink (CLAUDE.md -> docs/claude.md, as many
	// projects have): its target is protected too, and the link cannot be
	// removed or replaced.
	{name: "link_protected_target_write", setup: hostFiles(without("work/CLAUDE.md"), files("work/docs/claude.md", "# rules\n"), symlink("docs/claude.md", "work/CLAUDE.md")),
		args: probe("write", "{work}/docs/claude.md"), want: "DENIED EROFS"},
	{name: "link_protected_unlink", setup: hostFiles(without("work/CLAUDE.md"), files("work/docs/claude.md", "# rules\n"), symlink("docs/claude.md", "work/CLAUDE.md")),
		args: probe("unlink", "{work}/CLAUDE.md"), want: "DENIED EBUSY"},
	{name: "link_protected_replace", setup: hostFiles(without("work/CLAUDE.md"), files("work/docs/claude.md", "# rules\n", "work/evil.md", "evil\n"), symlink("docs/claude.md", "work/CLAUDE.md")),
		args: probe("rename", "{work}/evil.md", "{work}/CLAUDE.md"), want: "DENIED EBUSY"},
	// A dangling one: the file it names gets a placeholder.
	{name: "link_protected_dangling_target", setup: hostFiles(files("work/notes/.keep", ""), symlink("notes/agents.md", "work/AGENTS.md")),
		args: probe("create", "{work}/notes/agents.md"), want: "DENIED EEXIST"},
	// A protected directory that is a link into the sandbox HOME (by its host
	// path): what the host's editor reads through it is read-only inside, at
	// the sandbox path.
	{name: "link_protected_into_sandbox_home", setup: hostFiles(without("work/.vscode"), homeFiles("vsc/settings.json", "{}\n"), symlink("{sandboxhome}/vsc", "work/.vscode")),
		args: probe("create", "{home}/vsc/tasks.json"), want: "DENIED EROFS"},
	// A masked name that is a link: it reads empty, and so does its target.
	{name: "link_mask_read_link", setup: hostFiles(without("work/.env"), files("work/config/prod.env", "API_KEY=escape-test\n"), symlink("config/prod.env", "work/.env")),
		args: probe("read", "{work}/.env"), want: "DENIED EMPTY"},
	{name: "link_mask_read_target", setup: hostFiles(without("work/.env"), files("work/config/prod.env", "API_KEY=escape-test\n"), symlink("config/prod.env", "work/.env")),
		args: probe("read", "{work}/config/prod.env"), want: "DENIED EMPTY"},
	// .git as a file (a linked worktree's or a submodule's gitdir pointer):
	// rewriting it would point the user's git at a directory the agent wrote.
	{name: "git_file_pointer_write", setup: hostFiles(without("work/.git"), files("work/.git", "gitdir: /nonexistent/main/.git/worktrees/w\n")),
		args: probe("write", "{work}/.git"), want: "DENIED EROFS"},
	{name: "git_file_pointer_unlink", setup: hostFiles(without("work/.git"), files("work/.git", "gitdir: /nonexistent/main/.git/worktrees/w\n")),
		args: probe("unlink", "{work}/.git"), want: "DENIED EBUSY"},
	// A tree the user (or the project's .stockade.json) names through a link
	// inside the project: refused, never followed to ~/.ssh.
	{name: "link_ro_entry_through_project", setup: hostFiles(files("work/.stockade.json", `{"ro": ["docs"]}`+"\n"), symlink("../home/.ssh", "work/docs")),
		args: probe("read", "{work}/docs/id_rsa"), want: "REFUSED", refused: "is a symlink inside", refusedLate: true},
	// Section 4: a protected file with a second name the sandbox could write.
	{name: "hardlink_protected_file", setup: hostFiles(files("work/.cursor/mcp.json", "{}\n"), hardlink("work/.cursor/mcp.json", "work/notes.json")),
		args: probe("write", "{work}/notes.json"), want: "REFUSED", refused: "has another name", refusedLate: true},
	{name: "hardlink_in_protected_dir", setup: hostFiles(files("work/.claude/hooks/check.sh", "#!/bin/sh\n"), hardlink("work/.claude/hooks/check.sh", "work/check.sh")),
		args: probe("write", "{work}/check.sh"), want: "REFUSED", refused: "has another name", refusedLate: true},
}

// hostFiles runs setups in order.
func hostFiles(setups ...func(fx *fixture) error) func(fx *fixture) error {
	return func(fx *fixture) error {
		for _, s := range setups {
			if err := s(fx); err != nil {
				return err
			}
		}
		return nil
	}
}

// homeFiles writes a file below the host directory of the sandbox HOME.
func homeFiles(rel, content string) func(fx *fixture) error {
	return func(fx *fixture) error {
		p := filepath.Join(fx.sandboxHm, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
}

// symlink makes the fixture path rel (relative to the fixture) a symlink to
// target ({sandboxhome} and the like expanded).
func symlink(target, rel string) func(fx *fixture) error {
	return func(fx *fixture) error {
		p := filepath.Join(fx.base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.Symlink(fx.expand([]string{target})[0], p)
	}
}

// hardlink gives the fixture file rel a second name.
func hardlink(rel, alias string) func(fx *fixture) error {
	return func(fx *fixture) error {
		return os.Link(filepath.Join(fx.base, rel), filepath.Join(fx.base, alias))
	}
}
