package escape

// nameRows: beyond git hooks, editor tasks and the instructions of a few agents, a
// project holds many more files that make a host tool run code without the user
// knowingly running the project's code: git hook managers' configs, tool-version
// managers that act at the next shell prompt, package managers' settings that name a
// program, editors' and other agents' configs (docs/threats.md, "Files that run code on
// the host later"). One name of each class exists in the fixture and must be read-only
// inside, as a file or as a directory.
var nameRows = []row{
	// Git hook managers: commands at the user's next commit.
	{name: "names_write_lefthook", setup: files("work/lefthook.yml", "pre-commit:\n"),
		args: probe("write", "{work}/lefthook.yml"), want: "DENIED EROFS"},
	{name: "names_write_lint_staged", setup: files("work/.lintstagedrc.json", "{}\n"),
		args: probe("write", "{work}/.lintstagedrc.json"), want: "DENIED EROFS"},
	{name: "names_write_commitlint", setup: files("work/commitlint.config.js", "module.exports = {}\n"),
		args: probe("write", "{work}/commitlint.config.js"), want: "DENIED EROFS"},
	{name: "names_write_simple_git_hooks", setup: files("work/.simple-git-hooks.json", "{}\n"),
		args: probe("write", "{work}/.simple-git-hooks.json"), want: "DENIED EROFS"},
	{name: "names_create_githooks_dir", setup: files("work/.githooks/pre-push", "#!/bin/sh\n"),
		args: probe("create", "{work}/.githooks/pre-commit"), want: "DENIED EROFS"},
	// allow_hooks frees the hook managers' files with the hooks, on purpose.
	{name: "names_allow_hooks_lefthook", setup: files("work/lefthook.yml", "pre-commit:\n"),
		flags: []string{"--allow-hooks"}, mutates: true,
		args: probe("write", "{work}/lefthook.yml"), want: "OK"},
	// Tool-version managers: code at the next prompt or tool command.
	{name: "names_write_mise_toml", setup: files("work/mise.toml", "[tools]\n"),
		args: probe("write", "{work}/mise.toml"), want: "DENIED EROFS"},
	{name: "names_write_tool_versions", setup: files("work/.tool-versions", "nodejs 22.0.0\n"),
		args: probe("write", "{work}/.tool-versions"), want: "DENIED EROFS"},
	{name: "names_write_rust_toolchain", setup: files("work/rust-toolchain.toml", "[toolchain]\nchannel = \"stable\"\n"),
		args: probe("write", "{work}/rust-toolchain.toml"), want: "DENIED EROFS"},
	// Package managers' settings that name a program to run.
	{name: "names_write_yarnrc", setup: files("work/.yarnrc.yml", "nodeLinker: node-modules\n"),
		args: probe("write", "{work}/.yarnrc.yml"), want: "DENIED EROFS"},
	{name: "names_write_yarn_release", setup: files("work/.yarn/releases/yarn-4.1.0.cjs", "// yarn\n"),
		args: probe("write", "{work}/.yarn/releases/yarn-4.1.0.cjs"), want: "DENIED EROFS"},
	{name: "names_write_pnpmfile", setup: files("work/.pnpmfile.cjs", "module.exports = {}\n"),
		args: probe("write", "{work}/.pnpmfile.cjs"), want: "DENIED EROFS"},
	{name: "names_write_cargo_config", setup: files("work/.cargo/config.toml", "[build]\n"),
		args: probe("write", "{work}/.cargo/config.toml"), want: "DENIED EROFS"},
	{name: "names_write_mvn_jvm_config", setup: files("work/.mvn/jvm.config", "-Xmx1g\n"),
		args: probe("write", "{work}/.mvn/jvm.config"), want: "DENIED EROFS"},
	// Editors: code when the project is opened.
	{name: "names_write_code_workspace", setup: files("work/proj.code-workspace", "{}\n"),
		args: probe("write", "{work}/proj.code-workspace"), want: "DENIED EROFS"},
	{name: "names_create_zed_tasks", setup: files("work/.zed/settings.json", "{}\n"),
		args: probe("create", "{work}/.zed/tasks.json"), want: "DENIED EROFS"},
	{name: "names_create_helix_languages", setup: files("work/.helix/config.toml", "\n"),
		args: probe("create", "{work}/.helix/languages.toml"), want: "DENIED EROFS"},
	{name: "names_write_nvim_lua", setup: files("work/.nvim.lua", "-- local\n"),
		args: probe("write", "{work}/.nvim.lua"), want: "DENIED EROFS"},
	{name: "names_write_dir_locals", setup: files("work/.dir-locals.el", "()\n"),
		args: probe("write", "{work}/.dir-locals.el"), want: "DENIED EROFS"},
	{name: "names_write_devcontainer_json", setup: files("work/.devcontainer.json", "{}\n"),
		args: probe("write", "{work}/.devcontainer.json"), want: "DENIED EROFS"},
	// Other agents: instructions, hooks and MCP servers they follow.
	{name: "names_create_windsurf_rule", setup: files("work/.windsurf/rules/style.md", "# style\n"),
		args: probe("create", "{work}/.windsurf/rules/evil.md"), want: "DENIED EROFS"},
	{name: "names_create_roo_mcp", setup: files("work/.roo/rules/style.md", "# style\n"),
		args: probe("create", "{work}/.roo/mcp.json"), want: "DENIED EROFS"},
	{name: "names_create_cursor_hooks", setup: files("work/.cursor/rules/style.mdc", "# style\n"),
		args: probe("create", "{work}/.cursor/hooks.json"), want: "DENIED EROFS"},
	{name: "names_create_copilot_hook", setup: files("work/.github/hooks/audit.json", "{}\n"),
		args: probe("create", "{work}/.github/hooks/evil.json"), want: "DENIED EROFS"},
	{name: "names_mkdir_kiro_hooks", setup: files("work/.kiro/steering/style.md", "# style\n"),
		args: probe("mkdir", "{work}/.kiro/hooks"), want: "DENIED EROFS"},
	{name: "names_write_openhands_setup", setup: files("work/.openhands/setup.sh", "#!/bin/sh\n"),
		args: probe("write", "{work}/.openhands/setup.sh"), want: "DENIED EROFS"},
	{name: "names_write_agent_md", setup: files("work/AGENT.md", "# instructions\n"),
		args: probe("write", "{work}/AGENT.md"), want: "DENIED EROFS"},
	// The agent's own work stays writable: workflows are reviewed at exit.
	{name: "names_workflow_writable", mutates: true,
		args: sh("mkdir -p .github/workflows && echo x > .github/workflows/ci.yml && echo OK"), want: "OK"},
	// Missing names that a running editor or agent would read at once get a
	// placeholder (EEXIST); a name an empty placeholder would mislead gets
	// none and is checked at exit instead.
	// Names no placeholder holds (policy.heldWhenMissing): created, then moved
	// aside when the sandbox ends.
	{name: "names_plant_zed_dir", args: sh("mkdir {work}/.zed && echo '{}' > {work}/.zed/tasks.json && echo DONE"), want: "DONE",
		check: quarantined("work/.zed")},
	{name: "names_plant_mise_toml", args: probe("create", "{work}/mise.toml"), want: "DENIED EEXIST"},
	{name: "names_plant_windsurf_dir", args: sh("mkdir {work}/.windsurf && echo DONE"), want: "DONE",
		check: quarantined("work/.windsurf")},
}
