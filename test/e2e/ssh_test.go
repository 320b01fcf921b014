package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestSSHAgent: with --ssh, OpenSSH's own tools inside the sandbox list the
// user's key and have it sign, and cannot change the user's agent; the
// signature verifies outside and the audit log holds it.
func TestSSHAgent(t *testing.T) {
	requireSandbox(t)
	up := testenv.StartSSHAgent(t)
	e := newEnv(t)
	pub, err := os.ReadFile(up.PubKey)
	if err != nil {
		t.Fatal(err)
	}
	// The public key only: ssh-keygen -Y sign would use a private key
	// file beside it instead of the agent.
	e.write("key.pub", string(pub))
	e.write("msg", "signed in the sandbox\n")
	script := `set -u
ssh-add -l
ssh-add -D >/dev/null 2>&1 && echo REMOVED-ALL
ssh-add -d key.pub >/dev/null 2>&1 && echo REMOVED-ONE
ssh-keygen -q -t ed25519 -N "" -f /tmp/new && ssh-add /tmp/new >/dev/null 2>&1 && echo ADDED
printf 'pw\npw\n' | ssh-add -x >/dev/null 2>&1 && echo LOCKED
ssh-keygen -Y sign -n file -f key.pub msg >/dev/null 2>&1 && echo SIGNED
ls "$(dirname "$SSH_AUTH_SOCK")"
`
	agentEnv := []string{"SSH_AUTH_SOCK=" + up.Sock}
	r := e.run("", agentEnv, "run", "--ssh", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run --ssh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range []string{"REMOVED-ALL", "REMOVED-ONE", "ADDED", "LOCKED"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the sandbox changed the user's agent (%s):\n%s", bad, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, up.Fingerprint) || !strings.Contains(r.stdout, "SIGNED") || !strings.Contains(r.stdout, "agent.sock\n") {
		t.Errorf("inside: want the key listed, a signature and only the socket in its directory:\n%s%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "stockade: LOOSENED: ssh: the sandbox can have your SSH agent sign with every key") {
		t.Errorf("no LOOSENED line for --ssh:\n%s", r.stderr)
	}
	// Outside: the user's agent is as it was, and the signature is its.
	cmd := exec.Command("ssh-add", "-l")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+up.Sock)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Count(string(out), "SHA256:") != 1 || !strings.Contains(string(out), up.Fingerprint) {
		t.Errorf("the user's agent changed: %v\n%s", err, out)
	}
	signers := e.write(filepath.Join(t.TempDir(), "signers"), "me@example "+string(pub))
	verify := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me@example", "-n", "file", "-s", filepath.Join(e.workdir, "msg.sig"))
	verify.Stdin = strings.NewReader("signed in the sandbox\n")
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("the signature made in the sandbox does not verify: %v\n%s", err, out)
	}
	// The audit log: the signature and the refusals.
	all := e.list(true)
	if len(all) != 1 {
		t.Fatalf("list --all: %+v", all)
	}
	logs := e.run("", nil, "logs", "-s", all[0].ID).stdout
	for _, want := range []string{
		"sshagent: ssh agent signed with " + up.Fingerprint + " (ssh-ed25519): sshsig namespace file",
		"sshagent: ssh agent refused remove all identities",
		"sshagent: ssh agent refused remove identity",
		"sshagent: ssh agent refused add identity",
		"sshagent: ssh agent refused lock",
		"ssh: the sandbox can have your SSH agent sign with every key", // in the start event's loosenings
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, logs)
		}
	}
}

// TestSSHAgentKeys: --ssh-key offers only the keys named.
func TestSSHAgentKeys(t *testing.T) {
	requireSandbox(t)
	up := testenv.StartSSHAgent(t)
	e := newEnv(t)
	agentEnv := []string{"SSH_AUTH_SOCK=" + up.Sock}
	// Another key, added to the user's agent: not named, not offered.
	other := filepath.Join(up.Dir, "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	add := exec.Command("ssh-add", "-q", other)
	add.Env = append(os.Environ(), agentEnv...)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	r := e.run("", agentEnv, "run", "--ssh", "--ssh-key", up.Fingerprint, "--", "ssh-add", "-l")
	if r.code != 0 || strings.Count(r.stdout, "SHA256:") != 1 || !strings.Contains(r.stdout, up.Fingerprint) {
		t.Errorf("--ssh-key %s: exit %d, listed:\n%s%s", up.Fingerprint, r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "LOOSENED: ssh: the sandbox can have your SSH agent sign with "+up.Fingerprint) {
		t.Errorf("the LOOSENED line does not name the key:\n%s", r.stderr)
	}
}

// TestSSHAgentBadInput: --ssh without an agent, or with a key it does not
// hold, stops the start with one line (exit 125) before anything is made;
// a malformed --ssh-key is a usage error.
func TestSSHAgentBadInput(t *testing.T) {
	requireSandbox(t)
	up := testenv.StartSSHAgent(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"no agent", nil, []string{"--ssh"}, 125, "--ssh: SSH_AUTH_SOCK is not set"},
		{"agent gone", []string{"SSH_AUTH_SOCK=" + filepath.Join(up.Dir, "nothing")}, []string{"--ssh"}, 125, "--ssh: reaching your SSH agent at"},
		{"relative socket", []string{"SSH_AUTH_SOCK=agent.sock"}, []string{"--ssh"}, 125, "is not an absolute path"},
		{"key not held", []string{"SSH_AUTH_SOCK=" + up.Sock}, []string{"--ssh", "--ssh-key", "SHA256:" + strings.Repeat("A", 43)}, 125, "your SSH agent holds no such key"},
		{"not a fingerprint", []string{"SSH_AUTH_SOCK=" + up.Sock}, []string{"--ssh", "--ssh-key", "MD5:00:11"}, 2, "not a SHA256 fingerprint"},
		{"key without --ssh", []string{"SSH_AUTH_SOCK=" + up.Sock}, []string{"--ssh-key", up.Fingerprint}, 2, "--ssh-key needs --ssh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			args := append(append([]string{"run"}, c.args...), "--", "sh", "-c", "echo RAN")
			r := e.run("", c.env, args...)
			lines := stderrLines(r.stderr)
			if r.code != c.code || strings.Contains(r.stdout, "RAN") || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr lines %q (want one with %q)", r.code, c.code, r.stdout, lines, c.want)
			}
			if _, err := os.Stat(filepath.Join(e.home, ".local/share/stockade")); err == nil {
				t.Errorf("a refused start left %s", filepath.Join(e.home, ".local/share/stockade"))
			}
		})
	}
}

// TestSSHAgentSocketInsideRefused: with the user's agent's socket in a tree
// the sandbox sees (here --ro of its directory), the sandbox could connect
// to it past the filter: --ssh refuses to start, and says why.
func TestSSHAgentSocketInsideRefused(t *testing.T) {
	requireSandbox(t)
	up := testenv.StartSSHAgent(t)
	e := newEnv(t)
	agentEnv := []string{"SSH_AUTH_SOCK=" + up.Sock}
	// What the sandbox would do: use the user's socket itself.
	r := e.run("", agentEnv, "run", "--ssh", "--ro", up.Dir, "--", "sh", "-c", "SSH_AUTH_SOCK="+up.Sock+" ssh-add -D")
	if r.code == 0 || !strings.Contains(r.stderr, "--ssh: your agent's socket "+up.Sock+" is inside "+up.Dir) {
		t.Errorf("run --ssh --ro %s: exit %d, want a refusal\n%s%s", up.Dir, r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command("ssh-add", "-l")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+up.Sock)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), up.Fingerprint) {
		t.Errorf("the user's agent changed: %v\n%s", err, out)
	}
}

// TestSSHGitCapture: git over SSH with --ssh and one allow rule, nothing
// more (issue 13): ssh reads no proxy variable and connects straight to
// the server, the capture takes the connection and the rule for the
// server's address and port lets it through, and the user's agent signs
// each login from outside. A clone and a push of a bare repository on the
// host work; a host without a rule is reset, and the denial is a line in
// the denials file. The server is sshd on the host's end of the test
// network (198.51.100.1: the host's own address, in the floor, so the
// rule is an IP rule that lifts it for that port; a loopback address
// would be the sandbox's own).
func TestSSHGitCapture(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	up := testenv.StartSSHAgent(t)
	sshd := testenv.StartSSHD(t, "198.51.100.1", up)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	repo, gitEnv := bareRepo(t, t.TempDir(), "cloned over ssh")
	e := newEnv(t)
	e.write("known_hosts", fmt.Sprintf("[198.51.100.1]:%d %s\n", sshd.Port, sshd.HostKey))
	script := fmt.Sprintf(`export GIT_SSH_COMMAND="ssh -F /dev/null -o UserKnownHostsFile=$PWD/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes"
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@sandbox GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@sandbox
set -e
git clone -q ssh://%s@%s%s /tmp/r 2>&1
git -C /tmp/r log --format=%%s
echo x >/tmp/r/x; git -C /tmp/r add x; git -C /tmp/r commit -q -m "pushed from the sandbox"
git -C /tmp/r push -q origin HEAD 2>&1
echo PUSHED
set +e
git ls-remote ssh://git@198.51.100.20/repo.git 2>&1 && echo REACHED
echo ---; cat /run/stockade/denials`, u.Username, sshd.Addr, repo)
	r := e.run("", []string{"SSH_AUTH_SOCK=" + up.Sock}, "run", "--log-level", "error", "--resolver", testnetDNS, "--ssh",
		"--agent-allow", sshd.Addr, "--", "sh", "-c", script)
	out, denials, _ := strings.Cut(r.stdout, "---\n")
	if r.code != 0 || !strings.Contains(out, "cloned over ssh\n") || !strings.Contains(out, "PUSHED\n") {
		t.Fatalf("git clone and push over ssh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	log := exec.Command("git", "-C", repo, "log", "--format=%s", "main")
	log.Env = gitEnv
	if b, err := log.CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "pushed from the sandbox\n") {
		t.Errorf("the push did not reach the repository on the host: %v\n%s", err, b)
	}
	if strings.Contains(out, "REACHED") || !strings.Contains(out, "Connection reset") {
		t.Errorf("ssh to a host without a rule was not reset:\n%s", out)
	}
	if !denialLine("", "capture", "198.51.100.20", 22).MatchString(denials) || strings.Contains(denials, "198.51.100.1:") {
		t.Errorf("the denials file, want the denied host's line alone:\n%s", denials)
	}
	// The audit log: both logins signed by the user's agent for this
	// server, each connection captured.
	all := e.list(true)
	if len(all) != 1 {
		t.Fatalf("list --all: %+v", all)
	}
	logs := e.run("", nil, "logs", "-s", all[0].ID, "--json").stdout
	var signs, conns int
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"event":"ssh_sign"`) && strings.Contains(l, `"host_key":"`+sshd.HostFingerprint+`"`) {
			signs++
		}
		if strings.Contains(l, `"event":"connection"`) && strings.Contains(l, `"proto":"capture"`) && strings.Contains(l, `"dst":"`+sshd.Addr+`"`) {
			conns++
		}
	}
	if signs < 2 || conns < 2 {
		t.Errorf("the audit log holds %d signatures for the server's host key and %d captured connections to %s, want 2 each:\n%s", signs, conns, sshd.Addr, logs)
	}
}
