package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SSHAgent is a real ssh-agent holding one fresh key, for the tests of
// --ssh.
type SSHAgent struct {
	Dir         string // a 0755 directory holding the agent's socket and the key's files
	Sock        string // the agent's socket, as in SSH_AUTH_SOCK
	Key, PubKey string // the key's private and public files
	Fingerprint string // the key's SHA256 fingerprint, as ssh-add -l prints it
}

// StartSSHAgent starts ssh-agent with a new ed25519 key in it; it is
// stopped when t ends. Without OpenSSH's client tools it skips (fails with
// MustWork).
func StartSSHAgent(t testing.TB) SSHAgent {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			SkipOrFail(t, "%s is missing (Debian: openssh-client)", tool)
		}
	}
	// Short: a socket's path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "stk-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := SSHAgent{Dir: dir, Sock: filepath.Join(dir, "agent.sock"), Key: filepath.Join(dir, "id")}
	a.PubKey = a.Key + ".pub"
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+a.Sock)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "stockade-test-key", "-f", a.Key)
	fields := strings.Fields(run("ssh-keygen", "-l", "-E", "sha256", "-f", a.PubKey))
	if len(fields) < 2 {
		t.Fatalf("ssh-keygen -l printed %q", fields)
	}
	a.Fingerprint = fields[1]
	agent := exec.Command("ssh-agent", "-D", "-a", a.Sock)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	// It prints its variables once its socket listens.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("ssh-agent printed nothing: %v", err)
	}
	run("ssh-add", "-q", a.Key)
	return a
}
