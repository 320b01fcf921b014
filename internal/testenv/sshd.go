package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SSHD is OpenSSH's sshd, run by a test as the test's own user.
type SSHD struct {
	Addr            string // IP:port it listens on
	Port            int
	HostKey         string // its public host key, "ssh-ed25519 AAAA…", as known_hosts holds it
	HostFingerprint string // its SHA256 fingerprint
}

// StartSSHD runs OpenSSH's sshd on a free port of ip, accepting the key of
// up for the user the test runs as (as root too: privilege separation
// chroots into /run/sshd); it is stopped when t ends. Without sshd it
// skips (fails with MustWork).
func StartSSHD(t testing.TB, ip string, up SSHAgent) SSHD {
	t.Helper()
	const sshd = "/usr/sbin/sshd" // sshd re-executes itself: an absolute path
	if _, err := os.Stat(sshd); err != nil {
		SkipOrFail(t, "%s is missing (Debian: openssh-server)", sshd)
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
	pubLine, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pubLine))
	s := SSHD{HostFingerprint: strings.Fields(string(out))[1], HostKey: f[0] + " " + f[1]}
	pub, err := os.ReadFile(up.PubKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	s.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
PidFile none
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
`, s.Addr, hostKey, filepath.Join(dir, "authorized_keys"))), 0o600)
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
	var said []string
	for lines.Scan() {
		if strings.Contains(lines.Text(), "Server listening on") {
			go func() {
				for lines.Scan() {
				}
			}()
			return s
		}
		said = append(said, lines.Text())
	}
	t.Fatalf("sshd did not start (%v):\n%s", lines.Err(), strings.Join(said, "\n"))
	return SSHD{}
}
