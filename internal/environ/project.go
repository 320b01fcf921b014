package environ

import "strings"

// projectSettable are the only variables a project's config file may set,
// and only to a literal value (never passed through from the host). That
// file comes with the repository, so it is the attacker's: every name here
// changes how a program formats its output or reports an error, and none
// changes which code runs, which files are read as code, where traffic
// goes, or which credentials are used. Everything else is refused, known or
// not: the loader's LD_*, NODE_OPTIONS, PYTHONPATH, PYTHONSTARTUP, PERL5OPT,
// RUBYOPT, JAVA_TOOL_OPTIONS, BASH_ENV, ENV, GIT_*, PATH, HOME, the proxy
// variables (egress), SSL_CERT_FILE, GOFLAGS (-toolexec), LANGUAGE (picks
// message catalogs, whose format strings reach printf), … A trailing "*"
// matches any characters; matching is exact otherwise (names are case
// sensitive: http_proxy is not HTTP_PROXY).
var projectSettable = []struct{ name, why string }{
	{"TZ", "the time zone: a zone name, or a tzfile read as data"},
	{"LANG", "the locale: glibc (2.20+) refuses names with a slash (CVE-2014-0475) and loads locales only from its own directory, since LOCPATH is not settable"},
	{"LC_*", "one locale category; as LANG"},
	{"NO_COLOR", "turns colour output off"},
	{"FORCE_COLOR", "turns colour output on (chalk, supports-color)"},
	{"CLICOLOR", "colour output on a terminal (BSD tools)"},
	{"CLICOLOR_FORCE", "colour output even when piped"},
	{"PYTHONUNBUFFERED", "unbuffered stdout and stderr"},
	{"PYTHONDONTWRITEBYTECODE", "no .pyc files written"},
	{"PYTHONUTF8", "UTF-8 mode on or off"},
	{"RUST_BACKTRACE", "print a backtrace on panic"},
	{"GOTRACEBACK", "how much a Go panic prints"},
}

// ProjectSettable reports whether a project config file may set name to a
// literal value.
func ProjectSettable(name string) bool {
	for _, s := range projectSettable {
		core, family := strings.CutSuffix(s.name, "*")
		if name == s.name || family && len(name) > len(core) && strings.HasPrefix(name, core) {
			return true
		}
	}
	return false
}

// ProjectSettableNames lists the names and patterns a project config file
// may set, for error messages.
func ProjectSettableNames() []string {
	var out []string
	for _, s := range projectSettable {
		out = append(out, s.name)
	}
	return out
}
