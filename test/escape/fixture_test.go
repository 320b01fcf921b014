package escape

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/internal/sandboxhome"
)

// testUser is the unprivileged user of the second pass when the tests run as root.
const testUser = "stockade-test"

// runner is the host user stockade is started as.
type runner struct {
	name     string              // subtest name: root or user
	cred     *syscall.Credential // nil: the test process's own
	uid, gid int
	root     string // a 0755 directory holding this runner's fixtures
}

func runners(t *testing.T) []runner {
	self := runner{name: "user", uid: os.Getuid(), gid: os.Getgid()}
	if os.Geteuid() != 0 {
		self.root = mkdir0755(t, "")
		return []runner{self}
	}
	self.name = "root"
	self.root = mkdir0755(t, "")
	u, err := user.Lookup(testUser)
	if err != nil {
		if out, err := exec.Command("useradd", "-m", testUser).CombinedOutput(); err != nil {
			t.Fatalf("creating %s: %v\n%s", testUser, err, out)
		}
		if u, err = user.Lookup(testUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	other := runner{name: "user", uid: uid, gid: gid, root: mkdir0755(t, ""),
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	return []runner{self, other}
}

func mkdir0755(t *testing.T, parent string) string {
	d, err := os.MkdirTemp(parent, "stockade-escape-")
	if err == nil {
		err = os.Chmod(d, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A container row's engine storage holds files of subordinate
		// ids, which only a user namespace that maps them removes for
		// an unprivileged runner (README, Containers).
		if os.RemoveAll(d) != nil && os.Geteuid() != 0 {
			exec.Command("podman", "unshare", "rm", "-rf", d).Run()
		}
	})
	return d
}

// hostSide is what a real host has running next to the sandbox: a process of the
// same user, services on the host's loopback and abstract namespace, an SSH agent.
type hostSide struct {
	pid       int    // a `sleep` of the runner's user
	abstract  string // name of a host abstract unix socket (without @)
	tcpPort   int    // a listener on the host's 127.0.0.1
	agentSock string // an "SSH agent" socket, as in SSH_AUTH_SOCK
	hostIP    string // a non-loopback address of the host, "" if none
}

func startHost(t *testing.T, ru runner) *hostSide {
	h := &hostSide{abstract: "stockade-escape-test-" + randHex(t)}
	sleep := exec.Command("sleep", "600")
	if ru.cred != nil {
		sleep.SysProcAttr = &syscall.SysProcAttr{Credential: ru.cred}
	}
	if err := sleep.Start(); err != nil {
		t.Fatalf("starting the host process: %v", err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	h.pid = sleep.Process.Pid

	listen := func(network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("host listener %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { l.Close() })
		go func() { // answer like a real service would, so a connect that got through is visible
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintln(c, "host service")
				c.Close()
			}
		}()
		return l
	}
	listen("unix", "@"+h.abstract)
	h.tcpPort = listen("tcp", "127.0.0.1:0").Addr().(*net.TCPAddr).Port
	agentDir := mkdir0755(t, "")
	h.agentSock = filepath.Join(agentDir, "agent.sock")
	fakeAgent(t, h.agentSock)
	os.Chmod(h.agentSock, 0o777)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				h.hostIP = n.IP.String()
				break
			}
		}
	}
	return h
}

// fakeAgent serves an "SSH agent" at sock that lists no keys and answers
// SSH_AGENT_SUCCESS to everything else: a request that --ssh's filter let
// through shows as "OK type 6".
func fakeAgent(t *testing.T, sock string) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("host agent %s: %v", sock, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [4]byte
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					msg := make([]byte, min(binary.BigEndian.Uint32(hdr[:]), 1<<20))
					if _, err := io.ReadFull(c, msg); err != nil || len(msg) == 0 {
						return
					}
					reply := []byte{0, 0, 0, 1, 6} // SSH_AGENT_SUCCESS
					if msg[0] == 11 {              // REQUEST_IDENTITIES: none
						reply = []byte{0, 0, 0, 5, 12, 0, 0, 0, 0}
					}
					c.Write(reply)
				}
			}()
		}
	}()
}

func randHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// fixture is one row's host side: a fake real HOME full of secrets, the project
// (workdir) with protected and masked files, another project, and a spare directory.
type fixture struct {
	ru                      runner
	host                    *hostSide
	base, home, data, work  string
	other, spare, sandboxHm string
	keepOwner               map[string]bool // files whose owner the row chose
	stdin                   string          // the row's stdin, for its run (row.stdin)
	ttyStderr               bool            // stockade's stderr is a pty, for the row's run (row.shownAfter)
}

// files of every fixture; the rows refer to them through {home}, {work}, {other}.
var fixtureFiles = map[string]string{
	"home/.ssh/id_rsa":          "-----BEGIN OPENSSH PRIVATE KEY----- escape-test\n",
	"home/.aws/credentials":     "[default]\naws_secret_access_key = escape-test\n",
	"home/.bashrc":              "# the user's real shell rc\n",
	"home/.config/gh/hosts.yml": "github.com:\n  oauth_token: gho_escape_test\n",
	"home/.local/share/stockade/home/other-agent/.credentials": "another agent's sandbox home\n",
	"other/secret.txt":            "another project's secret\n",
	"other/.git/hooks/pre-commit": "#!/bin/sh\n",
	"spare/data.txt":              "spare\n",
	"work/main.c":                 "int main(void) { return 0; }\n",
	"work/.env":                   "API_KEY=escape-test\n",
	"work/.env.local":             "DB_PASSWORD=escape-test\n",
	"work/.npmrc":                 "//registry.npmjs.org/:_authToken=escape-test\n",
	"work/.aws/credentials":       "[default]\naws_secret_access_key = escape-test\n",
	"work/.git/HEAD":              "ref: refs/heads/main\n",
	"work/.git/config":            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
	"work/.git/hooks/pre-commit":  "#!/bin/sh\nexit 0\n",
	"work/.git/objects/.keep":     "",
	"work/.git/refs/heads/.keep":  "",
	"work/.vscode/settings.json":  "{}\n",
	"work/.claude/settings.json":  "{}\n",
	"work/CLAUDE.md":              "# instructions\n",
}

func newFixture(t *testing.T, ru runner, host *hostSide, name string) *fixture {
	base, err := os.MkdirTemp(ru.root, strings.ReplaceAll(name, "/", "_")+"-")
	if err == nil {
		err = os.Chmod(base, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{ru: ru, host: host, base: base,
		home: filepath.Join(base, "home"), work: filepath.Join(base, "work"),
		other: filepath.Join(base, "other"), spare: filepath.Join(base, "spare")}
	fx.data = filepath.Join(fx.home, ".local", "share")
	for rel, content := range fixtureFiles {
		if err := fx.writeFile(rel, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The sandbox HOME of `stockade run` in this project (sandboxhome.Rel).
	key, err := sandboxhome.Key(fx.work)
	if err != nil {
		t.Fatal(err)
	}
	fx.sandboxHm = filepath.Join(fx.data, "stockade", sandboxhome.Rel("run", key, false))
	os.Chmod(filepath.Join(fx.home, ".ssh", "id_rsa"), 0o600)
	os.Chmod(filepath.Join(fx.work, ".git", "hooks", "pre-commit"), 0o755)
	return fx
}

// writeFile writes base/rel, creating its parents.
func (fx *fixture) writeFile(rel, content string, mode os.FileMode) error {
	p := filepath.Join(fx.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), mode)
}

// chown hands the fixture to the runner's user, as their own files would be.
func (fx *fixture) chown() error {
	if fx.ru.cred == nil {
		return nil
	}
	return filepath.WalkDir(fx.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err != nil || fx.keepOwner[p] {
			return err // chown would clear setuid bits and file capabilities
		}
		return os.Lchown(p, fx.ru.uid, fx.ru.gid)
	})
}

// env is a developer's environment: full of credentials that must stay outside.
func (fx *fixture) env() []string {
	return []string{
		"PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + fx.home,
		"XDG_DATA_HOME=" + fx.data,
		"XDG_STATE_HOME=" + filepath.Join(fx.home, ".local", "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(fx.home, ".config"),
		"LANG=C.UTF-8",
		"AWS_ACCESS_KEY_ID=AKIAESCAPETEST",
		"AWS_SECRET_ACCESS_KEY=escape-test-secret",
		"GITHUB_TOKEN=ghp_escape_test",
		"ANTHROPIC_API_KEY=sk-ant-escape-test",
		"NPM_TOKEN=npm_escape_test",
		"DATABASE_PASSWORD=escape-test",
		"REDIS_URL=redis://:escape-test@db.internal:6379", // a secret in a name that does not look like one
		"SSH_AUTH_SOCK=" + fx.host.agentSock,
	}
}

// expand fills the placeholders of a row's flags and arguments.
func (fx *fixture) expand(args []string) []string {
	r := strings.NewReplacer(
		"{probe}", probeBin, "{home}", fx.home, "{work}", fx.work, "{other}", fx.other,
		"{spare}", fx.spare, "{data}", fx.data, "{sandboxhome}", fx.sandboxHm,
		"{hostpid}", strconv.Itoa(fx.host.pid), "{abstract}", fx.host.abstract,
		"{hostport}", strconv.Itoa(fx.host.tcpPort), "{agentsock}", fx.host.agentSock,
		"{agentdir}", filepath.Dir(fx.host.agentSock),
		"{hostip}", fx.host.hostIP, "{uid}", strconv.Itoa(fx.ru.uid))
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// guarded are the workdir paths no row may change, unless it says so (mutates).
var guarded = []string{".git/hooks", ".git/config", ".git/HEAD", ".vscode", ".claude",
	"CLAUDE.md", "AGENTS.md", ".mcp.json", ".gitmodules", ".stockaderc", ".idea",
	".devcontainer", ".env", ".env.local", ".npmrc", ".aws"}

// snapshot records the host fixture: everything for a denial row, or all but the
// unguarded part of the workdir for a row that must work. The sandbox HOME (data)
// is the sandbox's own and is left out.
func (fx *fixture) snapshot(all bool) (map[string]string, error) {
	snap := map[string]string{}
	roots := []string{fx.home, fx.other, fx.spare}
	if all {
		roots = append(roots, fx.work)
	} else {
		for _, g := range guarded {
			roots = append(roots, filepath.Join(fx.work, g))
		}
	}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if (os.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR)) && p == root { // below a .git file
				snap[p] = "absent"
				return nil
			}
			if errors.Is(err, fs.ErrPermission) && d != nil && d.IsDir() && p != root {
				// A directory the harness cannot list (a container's
				// subordinate id owns it): its own entry, already
				// described, stands for it.
				snap[p] += " (unlistable)"
				return filepath.SkipDir
			}
			if err != nil {
				return err
			}
			if p == filepath.Join(fx.home, ".local") { // sandbox HOME, stockade's state
				return filepath.SkipDir
			}
			snap[p], err = describe(p, d)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("snapshot of %s: %w", root, err)
		}
	}
	return snap, nil
}

func describe(p string, d fs.DirEntry) (string, error) {
	fi, err := d.Info()
	if err != nil {
		return "", err
	}
	st := fi.Sys().(*syscall.Stat_t)
	s := fmt.Sprintf("%v uid=%d", fi.Mode(), st.Uid)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(p)
		return s + " -> " + target, err
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		return s + " " + hex.EncodeToString(sum[:8]), err
	}
	return s, nil
}

func diffSnapshots(before, after map[string]string) string {
	var lines []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			lines = append(lines, "removed: "+p)
		} else if a != b {
			lines = append(lines, fmt.Sprintf("changed: %s: %s => %s", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			lines = append(lines, "created: "+p)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// firstLine reads the first line of a file on the host.
func firstLine(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	l, err := bufio.NewReader(f).ReadString('\n')
	return strings.TrimSuffix(l, "\n"), err
}
