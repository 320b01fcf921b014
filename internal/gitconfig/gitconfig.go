// Package gitconfig makes the sanitized copy of the user's git
// configuration that --gitconfig gives the sandbox: the identity git writes
// into commits (user.name, user.email, and the author and committer
// variants) and the aliases that are git commands, and nothing else.
//
// It is an allowlist on purpose. A git configuration holds credentials
// (credential.helper and its store, http.extraHeader, url.<base>.insteadOf
// with a token in the URL, sendemail.smtpPass) and settings that run
// programs (core.pager, core.editor, core.fsmonitor, core.sshCommand,
// core.hooksPath, diff and merge drivers, filters, gpg.program, shell
// aliases "!…"), and it can pull in other files (include.path,
// includeIf); a denylist would miss the next such key git adds. A key
// not in the table is left out.
//
// The user's configuration is read with git itself (ReadGlobal: git config
// --global --includes --list -z, in the workdir, so that an includeIf
// gitdir: of the project's identity applies), which follows includes as
// git would and leaves the parsing of the file format to git.
package gitconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Entry is one key and value as git lists them: the section and the key
// in lower case, a subsection as written.
type Entry struct{ Key, Value string }

// identity are the keys copied as they are, with why each is safe.
var identity = []struct{ key, why string }{
	{"user.name", "the name git writes into commits"},
	{"user.email", "the address git writes into commits"},
	{"author.name", "overrides user.name for the author"},
	{"author.email", "overrides user.email for the author"},
	{"committer.name", "overrides user.name for the committer"},
	{"committer.email", "overrides user.email for the committer"},
}

// Parse reads the output of git config --list -z: entries ended by NUL,
// each a key, a newline and the value (a key alone has no value).
func Parse(out []byte) []Entry {
	var es []Entry
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(rec, []byte{'\n'})
		if !ok {
			continue // "key" alone is boolean true: no allowed key is one
		}
		es = append(es, Entry{Key: strings.ToLower(string(k)), Value: string(v)})
	}
	return es
}

// Keep returns the entries the sandbox may have, the last value of each key
// (git's own rule: the last one read wins), in the order they came.
func Keep(es []Entry) []Entry {
	var out []Entry
	for _, e := range es {
		if !allowed(e) {
			continue
		}
		out = slices.DeleteFunc(out, func(o Entry) bool { return o.Key == e.Key })
		out = append(out, e)
	}
	return out
}

// allowed reports whether e is an identity key or an alias that is a git
// command.
func allowed(e Entry) bool {
	if strings.ContainsFunc(e.Value, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return false // a value git would not write itself
	}
	for _, k := range identity {
		if e.Key == k.key {
			return true
		}
	}
	name, ok := strings.CutPrefix(e.Key, "alias.")
	if !ok || !isAliasName(name) {
		return false
	}
	// "!…" runs a shell; git looks at the first character, this at the
	// first that is not a blank.
	return !strings.HasPrefix(strings.TrimLeft(e.Value, " \t"), "!")
}

// isAliasName reports whether name is a plain variable name (a letter,
// then letters, digits and "-"): a dotted one would be a subsection.
func isAliasName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	})
}

// Render writes the kept entries as a git configuration file.
func Render(es []Entry) string {
	var b strings.Builder
	b.WriteString("# Written by stockade (--gitconfig): your git identity and aliases, copied from\n" +
		"# your global git configuration without anything that holds a credential or runs\n" +
		"# a program. Read-only; it goes when the run ends.\n")
	section := ""
	for _, e := range es {
		sec, name, _ := strings.Cut(e.Key, ".")
		if sec != section {
			fmt.Fprintf(&b, "[%s]\n", sec)
			section = sec
		}
		fmt.Fprintf(&b, "\t%s = %s\n", name, quote(e.Value))
	}
	return b.String()
}

// quote writes v as a quoted git configuration value.
func quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}

// Sanitized reads the user's global git configuration from dir (the
// workdir) and returns its sanitized copy and the keys it holds.
func Sanitized(dir string) (string, []string, error) {
	out, err := ReadGlobal(dir)
	if err != nil {
		return "", nil, err
	}
	kept := Keep(Parse(out))
	if len(kept) == 0 {
		return "", nil, errors.New("--gitconfig: your global git configuration has no user.name, user.email or alias to give the sandbox; set them (git config --global user.name NAME) or leave out --gitconfig")
	}
	var keys []string
	for _, e := range kept {
		keys = append(keys, e.Key)
	}
	return Render(kept), keys, nil
}

// ReadGlobal runs git config --global --includes --list -z in dir.
func ReadGlobal(dir string) ([]byte, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, errors.New("--gitconfig: git is not installed here, and stockade reads your git configuration with it; install git or leave out --gitconfig")
	}
	cmd := exec.Command(git, "config", "--global", "--includes", "--list", "-z")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("--gitconfig: reading your global git configuration (git config --global --list): %s; set user.name and user.email (git config --global user.name NAME) or leave out --gitconfig", msg)
	}
	return out, nil
}
