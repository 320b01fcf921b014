package escape

// protectRows: the project is writable, but the files that make the host run code later
// (git hooks and config, editor tasks, agent instructions, MCP servers) are read-only
// inside it (docs/architecture.md, "Filesystem view"), by every route: write, create,
// chmod, rename, unlink, link, symlink, and by changing the mounts that protect them. A
// protected path that does not exist yet must not be creatable either: the agent would
// plant it.
var protectRows = []row{
	// .git/hooks: persistence that runs at the developer's next commit.
	{name: "write_git_hook", args: probe("write", "{work}/.git/hooks/pre-commit"), want: "DENIED EROFS"},
	{name: "create_git_hook", args: probe("create", "{work}/.git/hooks/post-checkout"), want: "DENIED EROFS"},
	{name: "chmod_git_hook", args: probe("chmod", "{work}/.git/hooks/pre-commit"), want: "DENIED EROFS"},
	{name: "truncate_git_hook", args: probe("truncate", "{work}/.git/hooks/pre-commit"), want: "DENIED EROFS"},
	{name: "unlink_git_hook", args: probe("unlink", "{work}/.git/hooks/pre-commit"), want: "DENIED EROFS"},
	{name: "symlink_git_hook", args: probe("symlink", "/bin/sh", "{work}/.git/hooks/post-merge"), want: "DENIED EROFS"},
	{name: "rename_git_hooks_dir", args: probe("rename", "{work}/.git/hooks", "{work}/.git/hooks.old"), want: "DENIED EBUSY"},
	{name: "rename_git_dir", args: probe("rename", "{work}/.git", "{work}/.git.old"), want: "DENIED EBUSY"},
	{name: "rename_over_git_hooks", setup: files("work/hooks2/pre-commit", "#!/bin/sh\n"),
		args: probe("exchange", "{work}/hooks2", "{work}/.git/hooks"), want: "DENIED EXDEV"},
	// core.hooksPath or core.fsmonitor in .git/config runs a program on the host.
	{name: "write_git_config", args: probe("write", "{work}/.git/config"), want: "DENIED EROFS"},
	{name: "unlink_git_config", args: probe("unlink", "{work}/.git/config"), want: "DENIED EBUSY"},
	{name: "rename_over_git_config", setup: files("work/evil-config", "[core]\n\thooksPath = /tmp\n"),
		args: probe("rename", "{work}/evil-config", "{work}/.git/config"), want: "DENIED EXDEV"},
	{name: "link_git_config", args: probe("link", "{work}/.git/config", "{work}/config-link"), want: "DENIED EXDEV"},
	{name: "setxattr_git_config", args: probe("setxattr", "{work}/.git/config"), want: "DENIED EROFS"},
	// Editor and agent configuration that runs commands.
	{name: "write_vscode_settings", args: probe("write", "{work}/.vscode/settings.json"), want: "DENIED EROFS"},
	{name: "create_vscode_tasks", args: probe("create", "{work}/.vscode/tasks.json"), want: "DENIED EROFS"},
	{name: "rename_vscode_dir", args: probe("rename", "{work}/.vscode", "{work}/vscode.old"), want: "DENIED EBUSY"},
	{name: "create_claude_settings", args: probe("create", "{work}/.claude/settings.local.json"), want: "DENIED EROFS"},
	{name: "truncate_claude_md", args: probe("truncate", "{work}/CLAUDE.md"), want: "DENIED EROFS"},
	{name: "rename_claude_md", args: probe("rename", "{work}/CLAUDE.md", "{work}/CLAUDE.old"), want: "DENIED EBUSY"},
	{name: "write_mcp_json", setup: files("work/.mcp.json", "{}\n"),
		args: probe("write", "{work}/.mcp.json"), want: "DENIED EROFS"},
	{name: "protect_flag", setup: files("work/Makefile", "all:\n"), flags: []string{"--protect", "Makefile"},
		args: probe("write", "{work}/Makefile"), want: "DENIED EROFS"},
	// Protected paths that do not exist yet: the sandbox holds their place (EEXIST).
	{name: "plant_claude_dir", setup: without("work/.claude"), args: probe("mkdir", "{work}/.claude"), want: "DENIED EEXIST"},
	{name: "plant_vscode_dir", setup: without("work/.vscode"), args: probe("mkdir", "{work}/.vscode"), want: "DENIED EEXIST"},
	{name: "plant_idea_dir", args: probe("mkdir", "{work}/.idea"), want: "DENIED EEXIST"},
	{name: "plant_devcontainer_dir", args: probe("mkdir", "{work}/.devcontainer"), want: "DENIED EEXIST"},
	{name: "plant_mcp_json", args: probe("create", "{work}/.mcp.json"), want: "DENIED EEXIST"},
	{name: "plant_agents_md", args: probe("create", "{work}/AGENTS.md"), want: "DENIED EEXIST"},
	{name: "plant_claude_md", setup: without("work/CLAUDE.md"), args: probe("create", "{work}/CLAUDE.md"), want: "DENIED EEXIST"},
	{name: "plant_gitmodules", args: probe("create", "{work}/.gitmodules"), want: "DENIED EEXIST"},
	{name: "plant_stockaderc", args: probe("create", "{work}/.stockaderc"), want: "DENIED EEXIST"},
	{name: "plant_git_config", setup: without("work/.git/config"), args: probe("create", "{work}/.git/config"), want: "DENIED EEXIST"},
	// Masks cannot be written through, removed or unmounted.
	{name: "write_dotenv", args: probe("write", "{work}/.env"), want: "DENIED EACCES"},
	{name: "unlink_dotenv", args: probe("unlink", "{work}/.env"), want: "DENIED EBUSY"},
	{name: "umount_dotenv_mask", args: probe("umount", "{work}/.env"), want: "DENIED EPERM"},
	{name: "umount_aws_mask", args: probe("umount", "{work}/.aws"), want: "DENIED EPERM"},
	{name: "umount_shadow_mask", args: probe("umount", "/etc/shadow"), want: "DENIED EPERM"},
	// The protecting mounts themselves.
	{name: "umount_git_hooks", args: probe("umount", "{work}/.git/hooks"), want: "DENIED EPERM"},
	{name: "mount_over_git_hooks", args: probe("mount-tmpfs", "{work}/.git/hooks"), want: "DENIED EPERM"},
	{name: "bind_over_git_hooks", args: probe("bind", "{work}", "{work}/.git/hooks"), want: "DENIED EPERM"},
	{name: "remount_git_hooks_rw", args: probe("remount-rw", "{work}/.git/hooks"), want: "DENIED EPERM"},
	{name: "mount_setattr_git_hooks_rw", args: probe("mount-setattr", "{work}/.git/hooks"), want: "DENIED EPERM"},
	{name: "open_tree_git_hooks", args: probe("open-tree", "{work}/.git/hooks"), want: "DENIED EPERM"},
}
