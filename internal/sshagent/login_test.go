package sshagent

import (
	"fmt"
	"os/exec"
	"os/user"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestFilterWithSSHLogin: ssh logs in with the user's key through the
// filter; the audit log names the user, the service and the server's host
// key.
func TestFilterWithSSHLogin(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	sshd := testenv.StartSSHD(t, "127.0.0.1", up)
	port, hostFP := sshd.Port, sshd.HostFingerprint
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
