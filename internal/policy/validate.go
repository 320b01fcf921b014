package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/stockade-dev/stockade/internal/environ"
)

// problem is one finding about one value of a Policy.
type problem struct {
	key, value, msg string
}

// String never shows the value of an env entry: it may be a secret.
func (p problem) String() string {
	v := p.value
	if p.key == "env" {
		v, _, _ = strings.Cut(v, "=")
	}
	return fmt.Sprintf("%s %q %s", p.key, v, p.msg)
}

// Validate checks a resolved policy against the machine it will run on:
// the workdir is an absolute, existing directory that is neither "/" nor
// home nor a directory containing home; ro and rw paths are absolute, exist,
// and are none of those either (the real $HOME is never mounted); patterns,
// env entries, limits, log level and network are well formed. home is the
// user's real home directory ("" skips the home checks); stat is os.Stat
// outside tests.
func Validate(p Policy, home string, stat func(string) (fs.FileInfo, error)) error {
	if pr := check(p, home, stat); pr != nil {
		return errors.New(pr.String())
	}
	return nil
}

// Validate is Validate with the source of the offending value in front.
func (r Resolved) Validate(home string, stat func(string) (fs.FileInfo, error)) error {
	if pr := check(r.Policy, home, stat); pr != nil {
		return fmt.Errorf("%s: %s", r.source(pr.key, pr.value), pr)
	}
	return nil
}

// source returns where the value of key came from.
func (r Resolved) source(key, value string) string {
	for _, e := range r.ListSources[key] {
		if e.Value == value {
			return e.Source
		}
	}
	if s, ok := r.Sources[key]; ok {
		return s
	}
	return SourceDefault
}

func check(p Policy, home string, stat func(string) (fs.FileInfo, error)) *problem {
	home = filepath.Clean(home)
	if pr := checkHostPath("workdir", p.Workdir, home, stat); pr != nil {
		return pr
	}
	if fi, err := stat(p.Workdir); err == nil && !fi.IsDir() {
		return &problem{"workdir", p.Workdir, "is not a directory; pass the project directory"}
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"ro", p.RO}, {"rw", p.RW}} {
		for _, v := range l.paths {
			if pr := checkHostPath(l.key, v, home, stat); pr != nil {
				return pr
			}
		}
	}
	for _, l := range []struct {
		key      string
		patterns []string
		builtin  []string // the table the list starts with, valid (TestTables)
	}{{"protect", p.Protect, defaultProtect}, {"mask", p.Mask, defaultMask}, {"unmask", p.Unmask, nil}} {
		for i, v := range l.patterns {
			if i < len(l.builtin) && v == l.builtin[i] {
				continue
			}
			c, err := Pattern(v)
			if err != nil {
				return &problem{l.key, v, err.Error()}
			}
			if c != v {
				return &problem{l.key, v, fmt.Sprintf("is not in clean form; write it as %q", c)}
			}
		}
	}
	for _, e := range p.Env {
		if _, _, _, err := environ.ParseEntry(e); err != nil {
			return &problem{"env", e, err.Error()}
		}
	}
	if err := validLimits(p); err != nil {
		return &problem{"limits", "", err.Error()}
	}
	if _, err := parseChoice(p.LogLevel, logLevels, "log level"); err != nil {
		return &problem{"log_level", p.LogLevel, err.Error()}
	}
	if _, err := parseChoice(p.Network, networks, "network mode"); err != nil {
		return &problem{"network", p.Network, err.Error()}
	}
	if _, err := parseChoice(p.Terminal, terminals, "terminal mode"); err != nil {
		return &problem{"terminal", p.Terminal, err.Error()}
	}
	return nil
}

// checkHostPath checks a workdir, ro or rw path. Mounting "/", home or a
// parent of home would hand the agent ~/.ssh and friends, whatever the key.
func checkHostPath(key, p, home string, stat func(string) (fs.FileInfo, error)) *problem {
	switch {
	case p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return &problem{key, p, "is not a clean absolute path"}
	case p == "/":
		return &problem{key, p, "is the root directory; " + narrowHint(key)}
	case home != "." && home != "/" && within(home, p):
		return &problem{key, p, "is your home directory or contains it; " + narrowHint(key)}
	}
	if err := existing(p, stat); err != nil {
		return &problem{key, p, err.Error()}
	}
	return nil
}

func narrowHint(key string) string {
	if key == "workdir" {
		return "run stockade in a project directory, or pass --workdir with one"
	}
	return "name the directory the agent needs, e.g. ~/go/pkg/mod"
}

// within reports whether p is dir or below it. Both are clean and absolute.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Warnings lists every setting in p that loosens the sandbox, one short line
// each, for printing at start and recording in the audit log. home is the
// user's real home directory and uid the user stockade runs as. A limit is
// never a loosening here: where a limit comes from decides who may raise it
// (Resolve), and one that cannot be enforced is the cgroup report's.
func Warnings(p Policy, home string, uid int) []string {
	var out []string
	for _, pr := range loosenings(p, home, uid) {
		out = append(out, pr.msg)
	}
	return out
}

// Warnings is Warnings with the source of each loosening appended.
func (r Resolved) Warnings(home string, uid int) []string {
	var out []string
	for _, pr := range loosenings(r.Policy, home, uid) {
		if pr.key == "" {
			out = append(out, pr.msg)
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", pr.msg, r.source(pr.key, pr.value)))
	}
	return out
}

func loosenings(p Policy, home string, uid int) []problem {
	var out []problem
	add := func(key, value, format string, args ...any) {
		out = append(out, problem{key, value, fmt.Sprintf(format, args...)})
	}
	if uid == 0 {
		add("", "", "running as root: an escape from the sandbox would be root on the host; run stockade as your user")
	}
	if p.AllowHooks {
		add("allow_hooks", "", "allow_hooks: git hooks are writable; a planted hook runs outside the sandbox on your next git command")
	}
	for _, u := range p.Unmask {
		add("unmask", u, "unmask %s: the agent can read it", u)
	}
	home = filepath.Clean(home)
	inHome := func(v string) bool { return home != "." && home != "/" && within(v, home) }
	for _, v := range p.RW {
		if !within(v, p.Workdir) {
			add("rw", v, "rw %s: writable outside the workdir", v)
		}
	}
	for _, v := range p.RO {
		if inHome(v) && !within(v, p.Workdir) {
			add("ro", v, "ro %s: part of your home directory is readable", v)
		}
	}
	for _, e := range p.Env {
		name, _, _ := strings.Cut(e, "=")
		if environ.IsCredentialName(name) {
			add("env", e, "env %s: a credential-shaped variable is passed in", name)
		}
	}
	if p.Terminal == TerminalRaw {
		add("terminal", "", "terminal raw: the command's escape sequences reach your terminal unfiltered (clipboard, title reports, notifications)")
	}
	if p.GitConfig {
		add("gitconfig", "", "gitconfig: your git identity (user.name, user.email) and git aliases are copied into the sandbox, read-only, without credential helpers or anything that runs code")
	}
	if p.SharedHome {
		add("shared_home", "", "shared_home: one sandbox HOME for every project; a shell rc, git config or agent hook one project's command leaves there runs in the others' sessions")
	}
	if p.Network != "none" && p.AgentPolicy == "allow" {
		add("agent_policy", "", "agent_policy allow: the sandbox reaches every public address (the private-range floor still holds)")
	}
	return out
}
