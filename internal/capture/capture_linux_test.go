//go:build linux

package capture

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// send opens a netlink socket of proto, sends msg and returns the kernel's
// failure, as init does.
func send(proto int, msg []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 256)
	n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
	if err == unix.EAGAIN {
		return nil
	}
	if err != nil {
		return err
	}
	if e := Failure(buf[:n]); e != 0 {
		return syscall.Errno(e)
	}
	return nil
}

// TestMessagesInstall sends the messages in a new user and network
// namespace and lists what the kernel made of them with nft(8) and ip(8),
// when they are installed (only the test uses them).
func TestMessagesInstall(t *testing.T) {
	if os.Getenv("CAPTURE_TEST_CHILD") == "1" {
		m := Build(3129, true)
		exec.Command("ip", "link", "set", "lo", "up").Run()
		for _, s := range []struct {
			proto int
			msg   []byte
		}{{ProtoRoute, m.Route}, {ProtoNetfilter, m.Rules}} {
			if err := send(s.proto, s.msg); err != nil {
				t.Fatalf("netlink %d: %v", s.proto, err)
			}
		}
		out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft: %v\n%s", err, out)
		}
		r, _ := exec.Command("ip", "-4", "route", "show", "table", "main").CombinedOutput()
		os.Stdout.Write(append(out, r...))
		return
	}
	for _, tool := range []string{"nft", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed: apt-get install nftables iproute2", tool)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMessagesInstall$")
	cmd.Env = append(os.Environ(), "CAPTURE_TEST_CHILD=1")
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"table inet stockade",
		"type nat hook output priority -100; policy accept;",
		"meta l4proto tcp ip daddr != 127.0.0.0/8 redirect to :3129",
		"meta l4proto tcp ip6 daddr != ::1 redirect to :3129",
		"local default dev lo",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, got)
		}
	}
}
