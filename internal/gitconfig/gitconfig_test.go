package gitconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dangerous are keys that hold a credential, run a program or pull in
// another file, one per line of the user's configuration; none may reach
// the copy. Each value carries a marker the test looks for.
var dangerous = []string{
	"credential.helper = store --file /tmp/MARK-cred",
	`credential.https://example.com.helper = "!echo MARK-credurl"`,
	"core.fsmonitor = /tmp/MARK-fsmonitor",
	"core.pager = MARK-pager",
	"core.editor = MARK-editor",
	"core.sshCommand = MARK-ssh",
	"core.hooksPath = /tmp/MARK-hooks",
	"core.askPass = MARK-askpass",
	"core.gitProxy = MARK-gitproxy",
	"filter.lfs.clean = MARK-filter-clean",
	"filter.lfs.smudge = MARK-filter-smudge",
	"filter.lfs.process = MARK-filter-process",
	"diff.external = MARK-diffext",
	"diff.x.textconv = MARK-textconv",
	"merge.x.driver = MARK-mergedriver",
	"gpg.program = MARK-gpg",
	"gpg.ssh.program = MARK-gpgssh",
	"user.signingKey = MARK-signingkey",
	"commit.gpgSign = true",
	"sequence.editor = MARK-seqeditor",
	"http.extraHeader = Authorization: Bearer MARK-token",
	"url.https://MARK-token@github.com/.insteadOf = https://github.com/",
	"sendemail.smtpPass = MARK-smtp",
	"github.token = MARK-ghtoken",
	"safe.directory = *",
	"alias.sh = !MARK-shell-alias",
	`alias.sh2 = " !MARK-shell-alias-blank"`,
	"alias.x.y = MARK-dotted-alias",
	"include.path = /tmp/MARK-include-missing",
	"includeIf.gitdir:/.path = /tmp/MARK-includeif-missing",
	"protocol.ext.allow = always",
	"uploadpack.packObjectsHook = MARK-hook",
	"receive.procReceiveRefs = MARK",
	"remote.origin.uploadpack = MARK-uploadpack",
	"remote.origin.receivepack = MARK-receivepack",
	"web.browser = MARK-browser",
	"man.viewer = MARK-man",
}

// writeConfig writes the lines as a git configuration file.
func writeConfig(t *testing.T, path string, lines []string) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		k, v, _ := strings.Cut(l, " = ")
		i := strings.Index(k, ".")
		j := strings.LastIndex(k, ".")
		if i == j {
			b.WriteString("[" + k[:i] + "]\n\t" + k[j+1:] + " = " + v + "\n")
		} else {
			b.WriteString("[" + k[:i] + ` "` + k[i+1:j] + `"]` + "\n\t" + k[j+1:] + " = " + v + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSanitized: from a configuration with every dangerous key, and an
// included file with them again, the copy holds the identity and the git
// aliases only, and git reads it back as such.
func TestSanitized(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	inc := filepath.Join(home, "included")
	writeConfig(t, inc, append([]string{`user.email = "me@example.com"`}, dangerous...))
	lines := append([]string{
		`user.name = "Jo \"Q\" Tester"`, "alias.co = checkout", "alias.lg = log --oneline -5",
		"include.path = " + inc,
	}, dangerous...)
	writeConfig(t, filepath.Join(home, ".gitconfig"), lines)

	text, keys, err := Sanitized(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "MARK") {
		t.Errorf("the copy holds a dangerous key:\n%s", text)
	}
	want := []string{"user.name", "alias.co", "alias.lg", "user.email"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("keys = %v, want %v", keys, want)
	}
	// git reads the copy back to the same values.
	copyPath := filepath.Join(t.TempDir(), "copy")
	os.WriteFile(copyPath, []byte(text), 0o444)
	out, err := exec.Command("git", "config", "--file", copyPath, "--list").Output()
	if err != nil {
		t.Fatalf("git cannot read the copy: %v\n%s", err, text)
	}
	for _, l := range []string{`user.name=Jo "Q" Tester`, "user.email=me@example.com", "alias.co=checkout", "alias.lg=log --oneline -5"} {
		if !strings.Contains(string(out), l+"\n") {
			t.Errorf("git reads the copy without %q:\n%s", l, out)
		}
	}
	if n := strings.Count(string(out), "\n"); n != 4 {
		t.Errorf("git reads %d entries from the copy:\n%s", n, out)
	}
}

func TestKeep(t *testing.T) {
	es := Parse([]byte("user.name\nA\x00user.name\nB\x00core.bare\x00alias.ok\nstatus\x00alias.bad\n\t!sh\x00user.email\nx\ny\x00alias.Up\nlog\x00"))
	got := Keep(es)
	if len(got) != 3 || got[0] != (Entry{"user.name", "B"}) || got[1] != (Entry{"alias.ok", "status"}) || got[2] != (Entry{"alias.up", "log"}) {
		t.Errorf("Keep = %q", got)
	}
}

func TestSanitizedNothing(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	if _, _, err := Sanitized(home); err == nil || !strings.Contains(err.Error(), "--gitconfig") {
		t.Errorf("no configuration: %v", err)
	}
	writeConfig(t, filepath.Join(home, ".gitconfig"), []string{"core.pager = less"})
	if _, _, err := Sanitized(home); err == nil || !strings.Contains(err.Error(), "no user.name") {
		t.Errorf("nothing to copy: %v", err)
	}
}
