package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// whyRows: the file of the run's denials (/run/stockade/denials) lives only
// in the sandbox: init makes it in a tmpfs of its own staging root, binds
// it read-only, and hands the supervisor the only descriptor that writes it.
// The sandbox sees it as a read-only mount point in a tmpfs of its own, so
// the command can neither write nor truncate nor replace it, nor move its
// directory away and put a forged one in its place, nor forge a line
// through a denied name; nor find a writable way to it: no mount of the
// file's tmpfs is writable in its view (the staging root, detached, took
// the writable one with it), and init, which made it, keeps no descriptor
// of it and is not dumpable. Each row first has a connection denied, so
// that the file holds a line.
var whyRows = []row{
	{name: "why_denials_write", args: sh(denyThen("{probe} write /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_truncate", args: sh(denyThen("{probe} truncate /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_chmod", args: sh(denyThen("{probe} chmod /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_unlink", args: sh(denyThen("{probe} unlink /run/stockade/denials")), want: "DENIED EBUSY"},
	{name: "why_denials_rename_over", args: sh(denyThen("echo forged >/run/stockade/forged; {probe} rename /run/stockade/forged /run/stockade/denials")), want: "DENIED EBUSY"},
	{name: "why_denials_rename_away", args: sh(denyThen("{probe} rename /run/stockade/denials /run/stockade/moved")), want: "DENIED EBUSY"},
	{name: "why_denials_dir_rename", args: sh(denyThen("{probe} rename /run/stockade /run/moved")), want: "DENIED EBUSY"},
	{name: "why_denials_dir_rmdir", args: sh(denyThen("{probe} rmdir /run/stockade")), want: "DENIED EBUSY"},
	{name: "why_denials_umount", args: sh(denyThen("{probe} umount /run/stockade/denials")), want: "DENIED EPERM"},
	{name: "why_denials_dir_umount", args: sh(denyThen("{probe} umount /run/stockade")), want: "DENIED EPERM"},
	{name: "why_denials_remount_rw", args: sh(denyThen("{probe} remount-rw /run/stockade/denials")), want: "DENIED EPERM"},
	{name: "why_denials_writable_mount", args: sh(denyThen(`dev=$(awk '$5 == "/run/stockade/denials" {print $3}' /proc/self/mountinfo)
[ -n "$dev" ] || { echo "NO MOUNT"; exit 0; }
awk -v d="$dev" '$3 == d && $6 !~ /^ro(,|$)/ {print "OK WRITABLE " $5; f = 1} END {if (!f) print "DENIED NOWRITABLE"}' /proc/self/mountinfo`)),
		want: "DENIED NOWRITABLE"},
	// Init's descriptors (/proc/1 is not there: hidepid=ptraceable).
	{name: "why_denials_init_fd_link", args: sh(denyThen("for f in /proc/1/fd/*; do {probe} readlink $f; done | sort -u")),
		want: "DENIED ENOENT"},
	{name: "why_denials_init_fd_open", args: sh(denyThen("for f in /proc/1/fd/*; do {probe} write $f; done | sort -u")),
		want: "DENIED ENOENT"},
	{name: "why_denials_init_getfd", args: sh(denyThen("for n in $(seq 0 16); do {probe} pidfd-getfd 1 $n; done | sort -u")), want: "DENIED EPERM"},
	// With a container engine, its launcher makes its socket beside the
	// file: the directory becomes the launcher's, so the command can
	// neither replace the socket nor the file. (Run by root, the launcher
	// and the command are both uid 0, as they were before the file.)
	{name: "why_denials_containers_write", flags: []string{"--containers"}, timeout: time.Minute,
		args: sh(denyThen("{probe} write /run/stockade/denials")), want: "DENIED EROFS"},
	{name: "why_denials_containers_socket", flags: []string{"--containers"}, timeout: time.Minute,
		args: sh(denyThen("{probe} unlink /run/stockade/engine.sock")), want: "OK", wantUser: "DENIED EACCES"},
	// A SOCKS5 name may hold any byte: one with a newline and a line of
	// its own must stay on its line, escaped.
	{name: "why_denials_forge_line", args: sh(`python3 -c 'import socket
s = socket.create_connection(("127.0.0.1", 1080), 5)
s.sendall(b"\x05\x01\x00"); s.recv(2)
h = b"x\n2000-01-01T00:00:00Z connect forged.example:443 | rule: FORGED"
s.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h + (443).to_bytes(2, "big")); s.recv(10)'
grep -q '^2000-01-01T00:00:00Z' /run/stockade/denials && echo OK FORGED || { grep -q 'x\\x0a2000' /run/stockade/denials && echo DENIED ESCAPED || echo "NO LINE"; }`),
		want: "DENIED ESCAPED"},
}

// denyThen has a connection denied (the file gets a line), checks that the
// file shows it, then runs the attempt.
func denyThen(attempt string) string {
	return `curl -s -o /dev/null http://denied.invalid/ ; grep -q 'denied.invalid:80 | rule: deny mode' /run/stockade/denials || { echo "NO LINE"; exit 0; }; ` + attempt
}

// gitconfigRows: --gitconfig hands the sandbox the user's identity and git
// aliases, and nothing of the rest of the user's git configuration: no
// credential, no program to run, no included file; the copy is read-only,
// and a symlink the command left where it goes is covered, never followed.
var gitconfigRows = []row{
	{name: "gitconfig_no_dangerous_key", setup: userGitConfig, flags: []string{"--gitconfig"},
		args: sh(`git config user.name >/dev/null || { echo "NO IDENTITY"; exit 0; }
n=$(git config --show-origin --list | grep -c MARK); [ "$n" = 0 ] && echo "DENIED NOKEY" || { echo "OK $n"; git config --list; }`),
		want: "DENIED NOKEY"},
	{name: "gitconfig_copy_write", setup: userGitConfig, flags: []string{"--gitconfig"},
		args: probe("write", "{home}/.gitconfig"), want: "DENIED EACCES"},
	{name: "gitconfig_copy_chmod", setup: userGitConfig, flags: []string{"--gitconfig"},
		args: probe("chmod", "{home}/.gitconfig"), want: "DENIED EROFS"},
	{name: "gitconfig_copy_unlink", setup: userGitConfig, flags: []string{"--gitconfig"},
		args: probe("unlink", "{home}/.gitconfig"), want: "DENIED EBUSY"},
	// The HOME's .gitconfig is the command's own from an earlier session:
	// a link to a file of the user's, which the copy must cover, not
	// write through or mount onto.
	{name: "gitconfig_planted_link", setup: plantedGitConfigLink, flags: []string{"--gitconfig"},
		args: sh("git config user.name"), want: "Jo Escape", check: spareKept},
}

// userGitConfig gives the fixture's user a git configuration with an
// identity, an alias and, marked MARK, keys that hold a credential, run a
// program or include a file.
func userGitConfig(fx *fixture) error {
	return fx.writeFile("home/.gitconfig", `[user]
	name = Jo Escape
	email = jo@example.invalid
[alias]
	co = checkout
	sh = !MARK-shell-alias
[core]
	pager = MARK-pager
	fsmonitor = MARK-fsmonitor
	sshCommand = MARK-ssh
	hooksPath = MARK-hooks
[credential]
	helper = store --file MARK-credentials
[http]
	extraHeader = Authorization: Bearer MARK-token
[url "https://MARK-token@example.invalid/"]
	insteadOf = https://example.invalid/
[filter "x"]
	smudge = MARK-smudge
[include]
	path = MARK-include
`, 0o644)
}

// plantedGitConfigLink is userGitConfig, and in the sandbox HOME of the
// project a link at .gitconfig to a file of the user's, as a command of an
// earlier session of the project can leave it.
func plantedGitConfigLink(fx *fixture) error {
	if err := userGitConfig(fx); err != nil {
		return err
	}
	if err := os.MkdirAll(fx.sandboxHm, 0o700); err != nil {
		return err
	}
	return os.Symlink(filepath.Join(fx.spare, "data.txt"), filepath.Join(fx.sandboxHm, ".gitconfig"))
}

// spareKept checks the file behind the planted link is unchanged.
func spareKept(fx *fixture) error {
	b, err := os.ReadFile(filepath.Join(fx.spare, "data.txt"))
	if err != nil || string(b) != "spare\n" {
		return fmt.Errorf("the link's target changed: %q, %v", b, err)
	}
	return nil
}
