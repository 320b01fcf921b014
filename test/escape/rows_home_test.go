package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stockade-dev/stockade/internal/sandboxhome"
)

// homeRows: what one project's sandboxed command leaves in its sandbox HOME
// does not run in another project's sessions. The first run (before) works
// in {other}, the second in {work}: the HOME is per project (issue 9 §5),
// and sharing it is the loosening --shared-home. The agent commands' HOMEs
// are placed the same way; test/e2e/home_test.go drives them, and the links
// an agent plants in its HOME for stockade to write through.
var homeRows = []row{
	// A shell rc: every shell of the next session sources it.
	{name: "home_rc_other_project", beforeFlags: inOther,
		before: sh("echo 'echo PLANTED' >>$HOME/.bashrc"),
		args:   probe("read", "{home}/.bashrc"), want: "DENIED ENOENT", check: plantedInOther(".bashrc")},
	// A git config whose pager runs at the next git command (core.fsmonitor,
	// an alias or a credential helper would do the same).
	{name: "home_gitconfig_other_project", beforeFlags: inOther,
		before: sh("git config --global core.pager 'echo PLANTED'"),
		args:   sh("git config --global --get core.pager || echo NONE"), want: "NONE", check: plantedInOther(".gitconfig")},
	// An agent's settings with a hook that runs at its next start.
	{name: "home_agent_hook_other_project", beforeFlags: inOther,
		before: sh(`mkdir -p $HOME/.claude && echo '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo PLANTED"}]}]}}' >$HOME/.claude/settings.json`),
		args:   probe("read", "{home}/.claude/settings.json"), want: "DENIED ENOENT", check: plantedInOther(".claude/settings.json")},
	// The loosening does what it says: one HOME for every project.
	{name: "home_shared_flag_shares", flags: []string{"--shared-home"}, beforeFlags: inOther,
		before: sh("echo PLANTED >$HOME/.stockade-escape-shared"),
		args:   probe("read", "{home}/.stockade-escape-shared"), want: "OK"},
}

// inOther runs the first run of a row in another project.
var inOther = []string{"--workdir", "{other}"}

// plantedInOther checks that the first run did plant rel, in the HOME of
// {other}: a row whose plant failed would pass for the wrong reason.
func plantedInOther(rel string) func(fx *fixture) error {
	return func(fx *fixture) error {
		key, err := sandboxhome.Key(fx.other)
		if err != nil {
			return err
		}
		p := filepath.Join(fx.data, "stockade", sandboxhome.Rel("run", key, false), rel)
		b, err := os.ReadFile(p)
		if !strings.Contains(string(b), "PLANTED") {
			return fmt.Errorf("the first run planted nothing in %s: %q, %v", p, b, err)
		}
		return nil
	}
}
