package session

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestPeerNested: a client in a PID namespace below ours (as inside a
// sandbox) is told apart from one beside us, through a pidfd and, as on a
// kernel without SO_PEERPIDFD, through its pid.
func TestPeerNested(t *testing.T) {
	if path := os.Getenv("STOCKADE_PEER_PASS"); path != "" {
		// Connect, hand the connection to the test, and go.
		c, err := net.Dial("unix", path)
		if err != nil {
			os.Exit(1)
		}
		f, _ := c.(*net.UnixConn).File()
		if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
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
	// A client that connected and is gone (a sandboxed process connects
	// from a child that shares its descriptors, and reaps it): refused,
	// both ways.
	for _, pidfd := range []bool{true, false} {
		if !pidfd {
			old := soPeerPidfd
			soPeerPidfd = 0x7fff
			defer func() { soPeerPidfd = old }()
		}
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		end := os.NewFile(uintptr(sp[1]), "pass")
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeerNested$")
		cmd.Env = append(os.Environ(), "STOCKADE_PEER_PASS="+path)
		cmd.ExtraFiles = []*os.File{end}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		end.Close()
		conn, err := ln.AcceptUnix()
		if err != nil {
			t.Fatal(err)
		}
		buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := unix.Recvmsg(sp[0], buf, oob, 0)
		unix.Close(sp[0])
		if err != nil {
			t.Fatal(err)
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		if len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil {
				defer unix.Close(fds[0]) // the client's end stays open
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if got, err := peerNested(conn); !got {
			t.Errorf("pidfd %v: a client gone before it asked: peerNested = %v, %v; want refused", pidfd, got, err)
		}
		conn.Close()
	}
}
