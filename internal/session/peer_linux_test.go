package session

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestPeerNested: a client in a PID namespace below ours (as inside a
// sandbox) is told apart from one beside us, through a pidfd and, as on a
// kernel without SO_PEERPIDFD, through its pid.
func TestPeerNested(t *testing.T) {
	if path := os.Getenv("STOCKADE_PEER_CHILD"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			os.Exit(1)
		}
		c.Read(make([]byte, 1)) // until the test has looked
		os.Exit(0)
	}
	path := t.TempDir() + "/control.sock"
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		name          string
		nested, pidfd bool
	}{
		{"beside", false, true}, {"nested", true, true},
		{"beside, by pid", false, false}, {"nested, by pid", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.pidfd {
				old := soPeerPidfd
				soPeerPidfd = 0x7fff // no such option: the older kernels' way
				defer func() { soPeerPidfd = old }()
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestPeerNested$")
			cmd.Env = append(os.Environ(), "STOCKADE_PEER_CHILD="+path)
			if c.nested {
				cmd.SysProcAttr = &syscall.SysProcAttr{
					Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
					UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
					GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
				}
			}
			if err := cmd.Start(); err != nil {
				if c.nested {
					testenv.SkipOrFail(t, "no user and PID namespace for the client: %v", err)
					return
				}
				t.Fatal(err)
			}
			defer cmd.Wait()
			conn, err := ln.AcceptUnix()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			got, err := peerNested(conn)
			if got != c.nested || err != nil {
				t.Errorf("peerNested = %v, %v; want %v", got, err, c.nested)
			}
		})
	}
}
