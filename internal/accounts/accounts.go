// Package accounts makes the sandbox's /etc/passwd and /etc/group: the
// host's, filtered to the accounts a sandboxed command has a reason to see
// (root, the user it runs as, nobody) and the groups they are in. The whole
// host files would list every account of a shared machine to the agent:
// user names, home directories, which services run.
package accounts

import (
	"slices"
	"strconv"
	"strings"
)

// kept are the accounts every sandbox sees besides the user's own.
var kept = []string{"root", "nobody"}

// keptGroups are the groups every sandbox sees besides the user's: the
// group of root, of nobody, and tty (devpts gives terminals gid 5).
var keptGroups = []string{"root", "nogroup", "nobody", "tty"}

// Filter returns the sandbox's passwd and group files from the host's, for
// the user uid with primary group gid: root, nobody and the user's own
// entry; the groups root, nobody's, tty, gid and every group that lists
// the user's name as a member. Lines are kept as they are, in order; the
// member lists of kept groups name only accounts that are kept.
func Filter(passwd, group []byte, uid, gid int) (string, string) {
	users := map[string]bool{}
	gids := map[string]bool{strconv.Itoa(gid): true}
	var pw strings.Builder
	for _, l := range lines(passwd) {
		f := strings.Split(l, ":")
		if len(f) < 7 {
			continue
		}
		if f[2] == strconv.Itoa(uid) || slices.Contains(kept, f[0]) {
			users[f[0]] = true
			gids[f[3]] = true
			pw.WriteString(l + "\n")
		}
	}
	var gr strings.Builder
	for _, l := range lines(group) {
		f := strings.Split(l, ":")
		if len(f) < 4 {
			continue
		}
		var members []string
		for _, m := range strings.Split(f[3], ",") {
			if users[m] {
				members = append(members, m)
			}
		}
		if !gids[f[2]] && !slices.Contains(keptGroups, f[0]) && len(members) == 0 {
			continue
		}
		f[3] = strings.Join(members, ",")
		gr.WriteString(strings.Join(f, ":") + "\n")
	}
	return pw.String(), gr.String()
}

func lines(b []byte) []string {
	var out []string
	for l := range strings.SplitSeq(string(b), "\n") {
		if l = strings.TrimSuffix(l, "\r"); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
