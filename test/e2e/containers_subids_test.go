package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestContainersNoSubIDs: a user without subordinate ids gets, from
// `doctor --containers` and from `run --containers`, what is missing and
// the usermod line that adds it; run exits 125 having run nothing and
// made nothing, and leaves no process behind. The user is made for the
// test (root only; internal/engine TestCheckSubIDs covers the message for
// any runner).
func TestContainersNoSubIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a user without subordinate ids needs root; the root pass of scripts/test.sh runs it")
	}
	requireSandbox(t)
	name, uid, gid := userWithoutSubIDs(t)

	root, err := os.MkdirTemp("", "stockade-nosub-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	home := filepath.Join(root, "home")
	work := filepath.Join(home, "proj")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n"), 0o644)
	for _, p := range []string{home, work, filepath.Join(work, "main.go")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	as := func(args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("running stockade %q as %s: %v", args, name, err)
		}
		return result{code, out.String(), errb.String()}
	}
	need := regexp.QuoteMeta("--containers needs 65536 subordinate uids and gids for " + name + " (none in /etc/subuid, none in /etc/subgid)")
	fix := `fix: usermod --add-subuids (\d+-\d+) --add-subgids (\d+-\d+) ` + regexp.QuoteMeta(name)
	// fixRange is the range the line's fix adds, the same to both files.
	fixRange := func(what string, re *regexp.Regexp, out string) string {
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Errorf("%s: no line naming the subordinate ids and the fix (%s):\n%s", what, re, out)
			return ""
		}
		if m[1] != m[2] {
			t.Errorf("%s: the fix adds different uid and gid ranges: %s", what, m[0])
		}
		return m[1]
	}

	before := tree(t, root)
	r := as("run", "--containers", "--", "sh", "-c", "echo RAN; touch $HOME/ran")
	if r.code != 125 {
		t.Errorf("run --containers exited %d, want 125\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "RAN") {
		t.Errorf("the command ran:\n%s%s", r.stdout, r.stderr)
	}
	runFix := fixRange("run --containers", regexp.MustCompile(`(?m)^stockade: refusing to start: `+need+`; `+fix+`$`), r.stderr)
	if after := tree(t, root); after != before {
		t.Errorf("run --containers left files behind:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if ps := processesOf(uid); len(ps) > 0 {
		t.Errorf("run --containers left processes of %s behind: %v", name, ps)
	}

	d := as("doctor", "--containers")
	if d.code == 0 {
		t.Errorf("doctor --containers exited 0 for a user without subordinate ids:\n%s", d.stdout)
	}
	docFix := fixRange("doctor --containers", regexp.MustCompile(`(?m)^FAIL +containers +`+need+`\n +`+fix+`$`), d.stdout+d.stderr)
	if runFix != docFix {
		t.Errorf("run's fix adds %s, doctor's %s", runFix, docFix)
	}
}

// userWithoutSubIDs makes a throwaway user with no line in /etc/subuid or
// /etc/subgid (useradd would add one by login.defs), removed at the end.
func userWithoutSubIDs(t *testing.T) (name string, uid, gid int) {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name = "stk-nosub-" + hex.EncodeToString(b)
	if out, err := exec.Command("useradd", "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0",
		"-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	// -f: doctor's sandboxes may still be exiting.
	t.Cleanup(func() { exec.Command("userdel", "-f", name).Run() })
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, name+":") {
				t.Fatalf("%s has ids for the new user %s: %s", f, name, l)
			}
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return name, uid, gid
}

// tree lists every path under dir with its mode.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			b.WriteString(p + ": " + err.Error() + "\n")
			return nil
		}
		fi, _ := d.Info()
		if fi != nil {
			b.WriteString(fi.Mode().String() + " " + p + "\n")
		}
		return nil
	})
	return b.String()
}

// processesOf lists the processes whose real uid is uid, by pid and name.
func processesOf(uid int) []string {
	var ps []string
	statuses, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, st := range statuses {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" && f[1] == strconv.Itoa(uid) {
				comm, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "comm"))
				ps = append(ps, filepath.Base(filepath.Dir(st))+" "+strings.TrimSpace(string(comm)))
			}
		}
	}
	return ps
}
