//go:build linux

package netns

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("STOCKADE_NETNS_CHILD") == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child runs in a new user and network namespace, where lo starts down.
func child() int {
	lo, err := net.InterfaceByName("lo")
	if err != nil || lo.Flags&net.FlagUp != 0 {
		os.Stdout.WriteString("lo already up or missing\n")
		return 1
	}
	if err := LoopbackUp(); err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		return 1
	}
	if lo, _ = net.InterfaceByName("lo"); lo.Flags&net.FlagUp == 0 {
		os.Stdout.WriteString("lo still down\n")
		return 1
	}
	// Loopback works, and nothing else is reachable.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		return 1
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		os.Stdout.WriteString("dial loopback: " + err.Error() + "\n")
		return 1
	}
	c.Close()
	if _, err := net.Dial("tcp", "192.0.2.1:80"); err == nil {
		os.Stdout.WriteString("reached 192.0.2.1 from an empty network namespace\n")
		return 1
	}
	return 0
}

func TestLoopbackUp(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STOCKADE_NETNS_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	if uid != 0 {
		cmd.SysProcAttr.AmbientCaps = []uintptr{12} // CAP_NET_ADMIN
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if cmd.ProcessState == nil && os.Getenv("STOCKADE_MUST_WORK") != "1" {
			t.Skipf("cannot create a user and network namespace: %v", err)
		}
		t.Fatalf("child: %v\n%s", err, out)
	}
}
