package policy

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// TestTables checks every built-in table: no duplicates, entries already in
// the form Pattern produces, relative, inside the workdir, globs only in the
// last element.
func TestTables(t *testing.T) {
	tables := map[string][]string{
		"defaultProtect": defaultProtect,
		"defaultMask":    defaultMask,
		"hookPaths":      hookPaths,
	}
	for name, table := range tables {
		seen := map[string]bool{}
		for _, e := range table {
			if seen[e] {
				t.Errorf("%s: duplicate %q", name, e)
			}
			seen[e] = true
			if path.IsAbs(e) || strings.Contains(e, "..") {
				t.Errorf("%s: %q must be relative and stay inside the workdir", name, e)
			}
			if c, err := Pattern(e); err != nil || c != e {
				t.Errorf("%s: %q normalizes to %q (%v)", name, e, c, err)
			}
		}
	}
	for _, h := range hookPaths {
		if !slices.Contains(defaultProtect, h) {
			t.Errorf("hook path %q is not protected by default", h)
		}
	}
	// Mask wins where both apply, so an entry in both is protected only
	// while it does not exist (a placeholder stops it being planted).
	bothOnPurpose := []string{".stockaderc"}
	for _, m := range defaultMask {
		if slices.Contains(defaultProtect, m) != slices.Contains(bothOnPurpose, m) {
			t.Errorf("%q: masked and protected = %v, want %v", m, slices.Contains(defaultProtect, m), slices.Contains(bothOnPurpose, m))
		}
	}
	if !slices.Contains(defaultProtect, ProjectFile) {
		t.Errorf("the project config %q must be protected", ProjectFile)
	}
	for _, k := range listKeys {
		if !slices.Contains(fileKeys, k) {
			t.Errorf("list key %q is not a file key", k)
		}
	}
	for _, k := range showKeys {
		if !slices.Contains(fileKeys, k) {
			t.Errorf("show key %q is not a file key", k)
		}
	}
	if len(showKeys) != len(fileKeys) {
		t.Errorf("showKeys has %d keys, fileKeys %d", len(showKeys), len(fileKeys))
	}
}

func TestDefault(t *testing.T) {
	p := Default("/w")
	want := map[string]bool{
		"workdir": p.Workdir == "/w",
		"log":     p.LogLevel == "warn",
		"network": p.Network == "proxy" && p.AgentPolicy == "deny" && len(p.AgentAllow) == 0,
		"pids":    p.Pids == 4096,
		"memory":  p.Memory == DefaultMemory && TmpfsBudget(p.Memory) == 4<<30,
		"cpus":    p.CPUs == 0,
		"hooks":   !p.AllowHooks,
		"protect": slices.Contains(p.Protect, ".git/hooks/") && slices.Contains(p.Protect, "CLAUDE.md"),
		"mask":    slices.Contains(p.Mask, ".env") && slices.Contains(p.Mask, ".ssh/"),
	}
	for what, ok := range want {
		if !ok {
			t.Errorf("Default: %s is wrong: %+v", what, p)
		}
	}
	p.Protect[0] = "changed"
	if defaultProtect[0] == "changed" {
		t.Error("Default shares its slice with the table")
	}
	if err := validLimits(p); err != nil {
		t.Error(err)
	}
}

// TestProtectTable checks the reasons behind the protected names: every entry
// says which tool acts on it and when; the entries that get no placeholder
// are names a placeholder could stand for (no glob); hooks are read at a
// later git command.
func TestProtectTable(t *testing.T) {
	for _, e := range protectTable {
		if len(e.why) < 20 {
			t.Errorf("%q: say which tool runs or reads what, and when (got %q)", e.path, e.why)
		}
		if e.when != live && e.when != later {
			t.Errorf("%q: when is %v, want live or later", e.path, e.when)
		}
		if e.noStandIn != "" && strings.ContainsAny(e.path, "*?[") {
			t.Errorf("%q: a glob never gets a placeholder, so noStandIn says nothing", e.path)
		}
		if e.hook && e.when != later {
			t.Errorf("%q: a hook runs at a later git command", e.path)
		}
		if reason, ok := NoPlaceholder(e.path); ok != (e.noStandIn != "") || reason != e.noStandIn {
			t.Errorf("NoPlaceholder(%q) = %q, %v", e.path, reason, ok)
		}
	}
	if _, ok := NoPlaceholder("Makefile"); ok {
		t.Error("NoPlaceholder is true for a pattern that is not built in")
	}
}

// TestProtectCovers checks one name of each class of files that make a host
// tool run code, and that the agent's legitimate work stays writable.
func TestProtectCovers(t *testing.T) {
	covered := func(name string) bool {
		for _, p := range defaultProtect {
			dir := strings.HasSuffix(p, "/")
			p = strings.TrimSuffix(p, "/")
			if ok, _ := path.Match(p, name); ok {
				return true
			}
			if dir && strings.HasPrefix(name, p+"/") {
				return true
			}
		}
		return false
	}
	for _, name := range []string{
		".git/hooks/pre-commit", ".husky/pre-commit", ".githooks/pre-push", // git hooks
		"lefthook.yml", ".lefthook.toml", "lefthook-local.yml", ".config/lefthook.yaml", ".lefthook/pre-commit/x.sh",
		".lintstagedrc", ".lintstagedrc.mjs", "lint-staged.config.js", // lint-staged
		".commitlintrc.json", "commitlint.config.ts", // commitlint
		".simple-git-hooks.json", "simple-git-hooks.cjs", ".overcommit.yml",
		"mise.toml", ".mise.local.toml", "mise.production.toml", ".config/mise/config.toml", ".tool-versions",
		"rust-toolchain.toml", ".python-version",
		".yarnrc.yml", ".yarn/releases/yarn-4.1.0.cjs", ".pnpmfile.cjs", "pnpm-workspace.yaml", "bunfig.toml",
		".cargo/config.toml", ".mvn/jvm.config",
		"proj.code-workspace", ".vscode/tasks.json", ".zed/settings.json", ".helix/languages.toml",
		".nvim.lua", ".exrc", ".dir-locals.el", "x.sublime-project", ".devcontainer.json",
		".windsurf/rules/r.md", ".clinerules", ".roo/mcp.json", ".roorules-code", ".continue/config.yaml",
		".aider.conf.yml", ".github/prompts/p.prompt.md", ".github/hooks/h.json", ".amazonq/rules/r.md",
		".kiro/hooks/h.kiro.hook", ".junie/guidelines.md", ".goosehints", ".openhands/setup.sh",
		"CRUSH.md", "QWEN.md", "AGENT.md", ".agents/skills/s/SKILL.md", ".cursor/hooks.json", ".rules",
	} {
		if !covered(name) {
			t.Errorf("%s is not protected by default", name)
		}
	}
	// The project's own code, and work that is reviewed at exit instead.
	for _, name := range []string{
		"package.json", "Cargo.toml", "build.rs", "pyproject.toml", "Makefile", "gradlew",
		".github/workflows/ci.yml", "node_modules/.bin/tsc", ".venv/bin/activate", ".gitattributes", "src/main.go",
	} {
		if covered(name) {
			t.Errorf("%s is protected by default; it is the project's own work", name)
		}
	}
}
