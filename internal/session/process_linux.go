package session

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/proc"
)

// The process handles and peer credentials a session uses are Linux's
// (pidfds, SO_PEERCRED); process_other.go keeps the package building
// elsewhere.

// openSupervisor returns a pidfd of the session's supervisor. The start
// time is read after the pidfd is open and while the process is still
// alive, so the pidfd cannot be of a process that reused the PID.
func openSupervisor(sess Session) (int, error) {
	pidfd, err := unix.PidfdOpen(sess.PID, 0)
	if err != nil {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	start := proc.StartTime(sess.PID)
	if start == "" || start != sess.PIDStart || exited(pidfd) {
		unix.Close(pidfd)
		return -1, fmt.Errorf("pid %d is no longer the session's supervisor", sess.PID)
	}
	return pidfd, nil
}

// exited reports whether the process of pidfd has exited.
func exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// waitExit waits up to timeout for the process of pidfd to exit.
func waitExit(pidfd int, timeout time.Duration) {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		if n > 0 || err != nil {
			return
		}
	}
}

// terminate sends SIGTERM to the process of pidfd.
func terminate(pidfd int) error {
	return os.NewSyscallError("pidfd_send_signal", unix.PidfdSendSignal(pidfd, unix.SIGTERM, nil, 0))
}

// peerUID returns the user id of the process at the other end of conn,
// as the kernel recorded it when it connected.
func peerUID(conn *net.UnixConn) (int, bool) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return 0, false
	}
	return int(cred.Uid), true
}

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5): a pidfd of the peer as it
// connected, which no reused pid can stand for. (A variable: a test makes
// it an option no kernel has, to take the older kernels' way.)
var soPeerPidfd = 77

// peerNested reports whether the process at the other end of conn is in a
// PID namespace below the one /proc shows: inside a sandbox (or a
// container), never where the user's own shell runs. The pid comes as a
// pidfd where the kernel gives one, whose fdinfo lists the pid in each
// namespace from /proc's down ("NSpid"); on an older kernel, from
// SO_PEERCRED and /proc/PID/status (where a pid the peer left behind may
// have been reused). A peer that is gone, or that cannot be looked at,
// counts as nested.
func peerNested(conn *net.UnixConn) (bool, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return true, err
	}
	pidfd, status := -1, ""
	var cerr error
	raw.Control(func(fd uintptr) {
		if p, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPidfd); err == nil {
			pidfd = p
			return
		}
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			cerr = err
			return
		}
		status = "/proc/" + strconv.Itoa(int(cred.Pid)) + "/status"
	})
	if cerr != nil {
		return true, os.NewSyscallError("getsockopt", cerr)
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
		status = "/proc/self/fdinfo/" + strconv.Itoa(pidfd)
	}
	b, err := os.ReadFile(status)
	if err != nil {
		return true, err
	}
	// A peer that connected and is gone reads "Pid: -1" and "NSpid: -1":
	// one field, as if beside us. (A sandboxed process can connect from a
	// child that shares its descriptors and exits.) Only a live peer
	// counts.
	alive, nested := false, true
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(string(rest)))
			alive = err == nil && pid > 0
		}
		if rest, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			f := strings.Fields(string(rest))
			nested = len(f) != 1 || f[0] == "-1" || f[0] == "0"
		}
	}
	if !alive {
		return true, errors.New("the client is gone: it connected from a process that has exited")
	}
	return nested, nil
}

// peerPID returns the process id of the other end of conn, 0 when unknown.
func peerPID(conn *net.UnixConn) int32 {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int32
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = cred.Pid
		}
	})
	return pid
}

// initHandle opens a pidfd of a sandbox's init, -1 where the kernel
// refuses one (signals then go by pid; see signalInit).
func initHandle(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// signalInit sends sig to init through its pidfd, which never names another
// process, or by pid where there is none (the caller holds the lock that
// clears the pid once init's run is over).
func signalInit(pidfd, pid int, sig unix.Signal) {
	if pidfd >= 0 {
		unix.PidfdSendSignal(pidfd, sig, nil, 0)
		return
	}
	unix.Kill(pid, sig)
}

func closeHandle(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
