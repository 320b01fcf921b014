package sshagent

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// startSSHD runs OpenSSH's sshd on a free loopback port, accepting the key
// of up for the current user; it returns the port and the fingerprint of
// its host key.
func startSSHD(t *testing.T, up testenv.SSHAgent) (int, string) {
	t.Helper()
	const sshd = "/usr/sbin/sshd" // sshd re-executes itself: an absolute path
	if _, err := os.Stat(sshd); err != nil {
		testenv.SkipOrFail(t, "%s is missing (Debian: openssh-server)", sshd)
	}
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "host")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", hostKey+".pub").Output()
	if err != nil {
		t.Fatal(err)
	}
	hostFP := strings.Fields(string(out))[1]
	pub, _ := os.ReadFile(up.PubKey)
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
AuthorizedKeysFile %s
PidFile none
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
`, port, hostKey, filepath.Join(dir, "authorized_keys"))), 0o600)
	if os.Geteuid() == 0 {
		// Privilege separation chroots into it.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "Server listening on") {
			go func() {
				for lines.Scan() {
				}
			}()
			return port, hostFP
		}
	}
	t.Fatalf("sshd did not start (%v)", lines.Err())
	return 0, ""
}

// TestFilterWithSSHLogin: ssh logs in with the user's key through the
// filter; the audit log names the user, the service and the server's host
// key.
func TestFilterWithSSHLogin(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	port, hostFP := startSSHD(t, up)
	sock, ev := serveFilter(t, up.Sock)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ssh := exec.Command("ssh", "-F", "/dev/null", "-o", "IdentityAgent="+sock, "-o", "IdentityFile=/dev/null",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
		"-o", "LogLevel=ERROR", "-p", fmt.Sprint(port), u.Username+"@127.0.0.1", "echo", "logged-in")
	out, err := ssh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "logged-in") {
		t.Fatalf("ssh through the filter: %v\n%s", err, out)
	}
	signs := ev.find("ssh_sign")
	if len(signs) != 1 {
		t.Fatalf("ssh_sign events: %v (all: %v)", signs, ev.all)
	}
	s := signs[0]
	if s["kind"] != "ssh-userauth" || s["user"] != u.Username || s["service"] != "ssh-connection" ||
		s["host_key"] != hostFP || s["fingerprint"] != up.Fingerprint || s["error"] != nil {
		t.Errorf("the sign event %v, want user %s and host key %s", s, u.Username, hostFP)
	}
	if d := ev.find("ssh_denied"); len(d) != 0 {
		t.Errorf("a login needed a refused request: %v", d)
	}
}
