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
	// A workdir below the home needs a mount point in the sandbox HOME,
	// removed at the end (issue 14) through descriptors that follow no
	// symlink: the command moved the mount point's parent aside and left a
	// link to a directory of the user's in its place, whose empty proj the
	// removal must not reach.
	{name: "home_mountpoint_tidy_link", setup: homeVictim, flags: []string{"--workdir", "{home}/w/proj"},
		args: sh("mv $HOME/w $HOME/w.moved && ln -s {home}/victim $HOME/w && echo PLANTED"), want: "PLANTED", check: victimKept},
}

// homeVictim makes the workdir below the home and the user's directory
// that home_mountpoint_tidy_link points its link at.
func homeVictim(fx *fixture) error {
	for _, d := range []string{"w/proj", "victim/proj"} {
		if err := os.MkdirAll(filepath.Join(fx.home, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// victimKept checks that the link was planted and the user's directory
// behind it is still there.
func victimKept(fx *fixture) error {
	links, _ := filepath.Glob(filepath.Join(fx.data, "stockade", "project-home", "run", "proj-*", "w"))
	if len(links) != 1 {
		return fmt.Errorf("the row planted no link in the sandbox HOME: %q", links)
	}
	if fi, err := os.Lstat(links[0]); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("the row planted no link at %s: %v", links[0], err)
	}
	if _, err := os.Stat(filepath.Join(fx.home, "victim", "proj")); err != nil {
		return fmt.Errorf("the tidy-up of the sandbox HOME followed the planted link and removed the user's %s: %v",
			filepath.Join(fx.home, "victim", "proj"), err)
	}
	return nil
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

// privateRows: stockade's own directories (state: the sessions' records
// and control sockets, the audit logs, the placeholders; data: every
// project's sandbox HOME and container storage; configuration) in a tree
// the sandbox sees, by a --rw or --ro path or through XDG_* in the
// workdir. Each was listed and writable: a session's control socket widens
// its network policy, a config.json loosens the user's next session. They
// are masked now, and a tree inside one is refused.
var privateRows = []row{
	{name: "private_state_in_rw", flags: []string{"--rw", "{home}/.local/state"},
		setup: func(fx *fixture) error {
			return fx.writeFile("home/.local/state/stockade/audit/old.jsonl", "{}\n", 0o600)
		},
		args: sh(privateProbe("{home}/.local/state/stockade")), want: "DENIED"},
	{name: "private_state_in_workdir", env: []string{"XDG_STATE_HOME={work}/.state"}, mutates: true,
		setup: func(fx *fixture) error { return fx.writeFile("work/.state/stockade/audit/old.jsonl", "{}\n", 0o600) },
		args:  sh(privateProbe("{work}/.state/stockade")), want: "DENIED"},
	{name: "private_data_in_ro", flags: []string{"--ro", "{data}"},
		args: sh(privateProbe("{data}/stockade")), want: "DENIED"},
	// Not made yet: the command would make it and write the user's
	// config.json, which the next session reads as the user's word.
	{name: "private_config_in_rw", flags: []string{"--rw", "{home}/.config"}, mutates: true, // stockade makes the directory it masks
		args: sh(`mkdir -p {home}/.config/stockade 2>/dev/null; echo '{"network":"host"}' >{home}/.config/stockade/config.json 2>/dev/null && echo WROTE || echo DENIED`),
		want: "DENIED",
		check: func(fx *fixture) error {
			if _, err := os.Lstat(filepath.Join(fx.home, ".config/stockade/config.json")); err == nil {
				return fmt.Errorf("config.json was written on the host")
			}
			return nil
		}},
	// A link on the way to one of them inside a writable tree (dotfiles
	// by stow: ~/.config/stockade -> ~/dotfiles/stockade, with --rw
	// ~/.config): the command replaced it with a directory of its own,
	// which stockade used from then on (a config.json of the command's,
	// read as the user's; the next sessions' control sockets and
	// placeholder records). Refused now.
	{name: "private_config_link_in_rw", flags: []string{"--rw", "{home}/.config"}, mutates: true,
		setup: func(fx *fixture) error {
			if err := fx.writeFile("home/dotfiles/stockade/config.json", "{}\n", 0o600); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(fx.home, "dotfiles/stockade"), filepath.Join(fx.home, ".config/stockade"))
		},
		args: sh(`rm {home}/.config/stockade && mkdir {home}/.config/stockade && echo '{"agent_policy":"allow"}' >{home}/.config/stockade/config.json && echo REPLACED`),
		want: "REFUSED", refused: "is a symlink inside"},
	{name: "private_state_link_in_rw", flags: []string{"--rw", "{home}/.local"}, mutates: true,
		setup: func(fx *fixture) error {
			if err := os.MkdirAll(filepath.Join(fx.home, "elsewhere/state"), 0o755); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(fx.home, ".local"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(fx.home, "elsewhere/state"), filepath.Join(fx.home, ".local/state"))
		},
		args: sh(`rm {home}/.local/state && mkdir -p {home}/.local/state/stockade/placeholders && echo REPLACED`),
		want: "REFUSED", refused: "is a symlink inside"},
	// The files themselves: config.json (or stockaderc) a link to a file
	// in a tree the sandbox writes (stow links files once the directory
	// exists), or a hard link of one. The command rewrote it, and the next
	// session read {"ro": [a secret]} as the user's word.
	{name: "private_config_file_link_in_rw", flags: []string{"--rw", "{home}/dotfiles"}, mutates: true,
		setup: func(fx *fixture) error {
			if err := fx.writeFile("home/dotfiles/stockade-config.json", "{}\n", 0o600); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(fx.home, ".config/stockade"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(fx.home, "dotfiles/stockade-config.json"), filepath.Join(fx.home, ".config/stockade/config.json"))
		},
		args: sh(`echo '{"agent_policy":"allow"}' >{home}/dotfiles/stockade-config.json && echo WROTE`),
		want: "REFUSED", refused: "which the sandbox sees"},
	{name: "private_rc_file_hard_link_in_rw", flags: []string{"--rw", "{home}/dotfiles"}, mutates: true,
		setup: func(fx *fixture) error {
			if err := fx.writeFile("home/dotfiles/stockaderc", "ANTHROPIC_API_KEY=sk-ant-real-0123456789\n", 0o600); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(fx.home, ".config/stockade"), 0o755); err != nil {
				return err
			}
			return os.Link(filepath.Join(fx.home, "dotfiles/stockaderc"), filepath.Join(fx.home, ".config/stockade/stockaderc"))
		},
		args: probe("read", "{home}/dotfiles/stockaderc"),
		want: "REFUSED", refused: "hard links"},
	// In a system tree every sandbox sees read-only (a read-only bind
	// leaves connect(2) to the control sockets alone). Refused before
	// anything is made.
	{name: "private_state_in_system_tree", env: []string{"XDG_STATE_HOME=/opt/stockade-escape-absent"}, mutates: true,
		args: sh(`ls -A /opt/stockade-escape-absent/stockade`), want: "REFUSED", refused: "which every sandbox sees",
		check: func(fx *fixture) error {
			if _, err := os.Lstat("/opt/stockade-escape-absent"); err == nil {
				os.RemoveAll("/opt/stockade-escape-absent")
				return fmt.Errorf("the run made /opt/stockade-escape-absent")
			}
			return nil
		}},
	{name: "private_tree_in_state", flags: []string{"--ro", "{home}/.local/state/stockade/audit"},
		setup: func(fx *fixture) error {
			return fx.writeFile("home/.local/state/stockade/audit/old.jsonl", "{}\n", 0o600)
		},
		args: probe("read", "{home}/.local/state/stockade/audit/old.jsonl"), want: "REFUSED", refused: "where stockade keeps its sessions' records"},
}

// privateProbe prints READ and what it listed, WROTE, or DENIED.
func privateProbe(d string) string {
	return `d=` + d + `; if [ -n "$(ls -A $d 2>/dev/null)" ]; then echo "READ $(ls -A $d | tr '\n' ' ')"; ` +
		`elif touch $d/planted 2>/dev/null; then echo WROTE; else echo DENIED; fi`
}
