package gitguard

import (
	"fmt"
	"strings"
)

// The other files of a git directory that say what git runs, parsed as git
// reads them.

// parsePointer reads a ".git" file: "gitdir: <path>" (setup.c,
// read_gitfile_gently: the prefix exactly, trailing newlines dropped).
func parsePointer(data []byte) (string, bool) {
	s, ok := strings.CutPrefix(string(data), "gitdir: ")
	if !ok {
		return "", false
	}
	s = strings.TrimRight(s, "\r\n")
	return s, s != ""
}

// parseCommondir reads a commondir file: a path, trailing newlines dropped
// (path.c, get_common_dir_noenv).
func parseCommondir(data []byte) (string, bool) {
	s := strings.TrimRight(string(data), "\r\n")
	return s, s != ""
}

// driverAttrs are the attributes that pick a driver from the configuration,
// and so a program: filter=<name> (clean, smudge, process), diff=<name>
// (command, textconv), merge=<name> (driver).
var driverAttrs = []string{"filter=", "diff=", "merge="}

// attributeDrivers lists the lines of an attributes file that name a
// driver, macro definitions ("[attr]name filter=x") among them.
func attributeDrivers(data []byte) []string {
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		for _, f := range fields[1:] {
			for _, d := range driverAttrs {
				if strings.HasPrefix(f, d) {
					out = append(out, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(line)))
				}
			}
		}
	}
	return out
}

// todoExecs lists the exec lines of a rebase or sequencer todo list
// ("exec <cmd>" or "x <cmd>"), which git rebase --continue runs.
func todoExecs(data []byte) []string {
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && (fields[0] == "exec" || fields[0] == "x") {
			out = append(out, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(line)))
		}
	}
	return out
}

// remoteURLs lists the URLs of a legacy remote file: "URL: <url>" lines
// of .git/remotes/<name>, or "<url>#<branch>" in .git/branches/<name>.
func remoteURLs(data []byte, branches bool) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if branches {
			if u, _, _ := strings.Cut(line, "#"); u != "" {
				out = append(out, u)
			}
			continue
		}
		if u, ok := strings.CutPrefix(line, "URL:"); ok {
			out = append(out, strings.TrimSpace(u))
		}
	}
	return out
}
