package escape

import (
	"fmt"
	"os"
	"path/filepath"
)

// depthRows: masks and protections below the top of the project (monorepos:
// apps/web/.env, packages/a/.vscode), and names the command creates where no
// placeholder could hold them. A masked name host tools read from a project
// directory (.npmrc, .envrc, .env) is held by a placeholder when missing, like a
// protected one; what the command creates at any other protected or masked name
// (below a missing directory, at depth, a glob's match) is moved aside when the
// sandbox ends, never left for the host's tools.
var depthRows = []row{
	// Secrets at any depth of the workdir and of --rw/--ro trees.
	{name: "read_nested_dotenv", setup: files("work/apps/web/.env", "API_KEY=escape-test\n"),
		args: probe("read", "{work}/apps/web/.env"), want: "DENIED EMPTY"},
	{name: "read_nested_dotenv_local", setup: files("work/services/api/.env.local", "DB_PASSWORD=escape-test\n"),
		args: probe("read", "{work}/services/api/.env.local"), want: "DENIED EMPTY"},
	{name: "read_deep_aws_dir", setup: files("work/a/b/c/d/.aws/credentials", "[default]\nescape-test\n"),
		args: probe("read", "{work}/a/b/c/d/.aws/credentials"), want: "DENIED ENOENT"},
	{name: "read_nested_dotenv_rw_tree", setup: files("spare/sub/.env", "API_KEY=escape-test\n"), flags: []string{"--rw", "{spare}"},
		args: probe("read", "{spare}/sub/.env"), want: "DENIED EMPTY"},
	{name: "read_nested_dotenv_ro_tree", setup: files("spare/sub/.env", "API_KEY=escape-test\n"), flags: []string{"--ro", "{spare}"},
		args: probe("read", "{spare}/sub/.env"), want: "DENIED EMPTY"},
	// Protections at depth: a subfolder opened in an editor, a nested repository.
	{name: "write_nested_vscode", setup: files("work/packages/a/.vscode/settings.json", "{}\n"),
		args: probe("create", "{work}/packages/a/.vscode/tasks.json"), want: "DENIED EROFS"},
	{name: "write_nested_repo_hook", setup: files("work/vendor/lib/.git/hooks/pre-commit", "#!/bin/sh\n", "work/vendor/lib/.git/config", "[core]\n"),
		args: probe("write", "{work}/vendor/lib/.git/hooks/pre-commit"), want: "DENIED EROFS"},
	{name: "write_nested_repo_config", setup: files("work/vendor/lib/.git/config", "[core]\n"),
		args: probe("write", "{work}/vendor/lib/.git/config"), want: "DENIED EROFS"},
	{name: "write_nested_claude_md", setup: files("work/packages/a/CLAUDE.md", "# a\n"),
		args: probe("write", "{work}/packages/a/CLAUDE.md"), want: "DENIED EROFS"},
	{name: "rename_nested_protected_parent", setup: files("work/packages/a/.vscode/settings.json", "{}\n"),
		args: probe("rename", "{work}/packages/a", "{work}/packages/b"), want: "DENIED EBUSY"},

	// Masked names host tools read from the project: held when missing.
	{name: "plant_npmrc", setup: without("work/.npmrc"), args: probe("create", "{work}/.npmrc"), want: "DENIED EEXIST"},
	{name: "plant_envrc", args: probe("create", "{work}/.envrc"), want: "DENIED EEXIST"},
	{name: "plant_dotenv", setup: without("work/.env"), args: probe("create", "{work}/.env"), want: "DENIED EEXIST"},

	// Created where nothing could hold them: moved aside at the end.
	{name: "created_env_local_quarantined", setup: without("work/.env.local"),
		args: sh("echo NODE_OPTIONS=--require=./evil.js > {work}/.env.local && echo DONE"), want: "DONE",
		check: quarantined("work/.env.local")},
	{name: "created_nested_npmrc_quarantined", setup: files("work/apps/web/index.js", "\n"),
		args: sh("echo node-options=--require=./evil.js > {work}/apps/web/.npmrc && echo DONE"), want: "DONE",
		check: quarantined("work/apps/web/.npmrc")},
	{name: "created_copilot_instructions_quarantined",
		args: sh("mkdir -p {work}/.github && echo evil > {work}/.github/copilot-instructions.md && echo DONE"), want: "DONE",
		check: quarantined("work/.github/copilot-instructions.md")},
	{name: "created_nested_vscode_quarantined",
		args: sh("mkdir -p {work}/pkg/.vscode && echo '{}' > {work}/pkg/.vscode/tasks.json && echo DONE"), want: "DONE",
		check: quarantined("work/pkg/.vscode")},
	{name: "created_protected_symlink_quarantined",
		args: sh("mkdir -p {work}/pkg && ln -s /tmp {work}/pkg/.claude && echo DONE"), want: "DONE",
		check: quarantined("work/pkg/.claude")},
}

// quarantined checks that the command's file at rel is gone from its name and
// kept under a quarantine name beside it.
func quarantined(rel string) func(fx *fixture) error {
	return func(fx *fixture) error {
		p := filepath.Join(fx.base, rel)
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s is still there after the sandbox ended", p)
		}
		if m, _ := filepath.Glob(p + ".stockade-quarantine-*"); len(m) != 1 {
			return fmt.Errorf("no quarantined copy of %s (found %v)", p, m)
		}
		return nil
	}
}
