package engine

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/accept"
)

// The registry proxy is the engine's: podman's HTTP_PROXY and HTTPS_PROXY
// name it, and its rules are --registry-allow's, not the agent's. It
// listens on the sandbox's loopback, where the command can connect too; a
// secret in the proxy's URL would not keep it out (the Docker API's /info
// reports the engine's proxy variables to any client). So the proxy asks
// the kernel who holds each connection it accepts: the client socket, in
// the sandbox's network namespace, must be one of the descriptors of the
// engine's own process (podman, which pulls in-process). The command
// cannot make a socket of the engine's nor pass one to it.

// engineProc is the engine's process, podman: a pidfd, which tells when it
// has exited (so that a pid reused since is never taken for it), and its
// pid in the supervisor's PID namespace.
type engineProc struct {
	pid int
	mu  sync.Mutex // held while fd is polled, so that it is not closed under a poll
	fd  *os.File   // nil once closed
}

// newEngineProc takes the pidfd the launcher sent.
func newEngineProc(fd int) (*engineProc, error) {
	f := os.NewFile(uintptr(fd), "engine pidfd")
	pid, err := pidfdPID(fd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("the engine's pidfd: %w", err)
	}
	return &engineProc{fd: f, pid: pid}, nil
}

// pidfdPID is the pid a pidfd refers to, in this process's PID namespace
// (its fdinfo's "Pid:" line).
func pidfdPID(fd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("fdinfo says Pid %q: not a live process here", strings.TrimSpace(v))
			}
			return pid, nil
		}
	}
	return 0, errors.New("no Pid in its fdinfo: not a pidfd")
}

// alive reports whether the process has not exited (and the pidfd is
// still open).
func (p *engineProc) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd == nil {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(p.fd.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

func (p *engineProc) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd != nil {
		p.fd.Close()
		p.fd = nil
	}
}

// made reports nil when the engine's process holds the client end of c,
// a connection accepted on the sandbox's loopback, else why not.
func (p *engineProc) made(c net.Conn) error {
	client, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
	server, err2 := netip.ParseAddrPort(c.LocalAddr().String())
	if err1 != nil || err2 != nil {
		return fmt.Errorf("not a TCP connection (%s)", c.RemoteAddr())
	}
	proc := "/proc/" + strconv.Itoa(p.pid)
	ino, err := socketInode(proc, client, server)
	if err != nil {
		return err
	}
	held, err := holds(proc, ino)
	if err != nil {
		return err
	}
	// Read after the scan: a pid reused since the engine exited would
	// have been another process's.
	if !p.alive() {
		return errors.New("the engine has exited")
	}
	if !held {
		return fmt.Errorf("the connection from %s is not the engine's", client)
	}
	return nil
}

// socketInode finds, in the socket tables of proc's network namespace
// (tcp, then tcp6, where a v4-mapped client shows), the inode of the
// established socket from client to server.
func socketInode(proc string, client, server netip.AddrPort) (uint64, error) {
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(proc + "/net/" + table)
		if err != nil {
			return 0, fmt.Errorf("reading the engine's sockets: %w", err)
		}
		ino, found, err := findSocket(f, client, server)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("reading the engine's sockets: %s: %w", table, err)
		}
		if found {
			return ino, nil
		}
	}
	return 0, fmt.Errorf("no socket from %s to %s in the engine's network namespace", client, server)
}

// findSocket reads a /proc/net/tcp or tcp6 table for the socket whose
// local address is client and remote address server.
func findSocket(r io.Reader, client, server netip.AddrPort) (uint64, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		local, err1 := procAddr(f[1])
		remote, err2 := procAddr(f[2])
		if err1 != nil || err2 != nil {
			return 0, false, fmt.Errorf("unexpected line %q", sc.Text())
		}
		if local != client || remote != server {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("unexpected inode %q", f[9])
		}
		if ino == 0 {
			return 0, false, nil // no longer any process's
		}
		return ino, true, nil
	}
	return 0, false, sc.Err()
}

// procAddr parses an address of /proc/net/tcp or tcp6: the address in
// hex, in host byte order by 32-bit word (little-endian here), a colon and
// the port in hex. A v4-mapped IPv6 address is returned as IPv4.
func procAddr(s string) (netip.AddrPort, error) {
	h, ps, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	port, err := strconv.ParseUint(ps, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, errors.New("not an address")
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// holds reports whether proc has a descriptor of the socket ino.
func holds(proc string, ino uint64) (bool, error) {
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	ents, err := os.ReadDir(proc + "/fd")
	if err != nil {
		return false, fmt.Errorf("reading the engine's descriptors: %w", err)
	}
	for _, e := range ents {
		if l, err := os.Readlink(proc + "/fd/" + e.Name()); err == nil && l == want {
			return true, nil
		}
	}
	return false, nil
}

// StrangerMessage is what a connection to the registry proxy that the
// engine did not make is answered.
const StrangerMessage = "stockade: this is the container engine's registry proxy, which serves its pulls only; " +
	"the command's own traffic goes through HTTP_PROXY under the agent's policy\n"

// engineOnly is the registry proxy's listener: it hands on only the
// connections the engine made, and answers the rest 403.
type engineOnly struct {
	net.Listener
	proc     *engineProc
	stranger func(client string, why error)
}

func (l engineOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		why := l.proc.made(c)
		if why == nil {
			return c, nil
		}
		if l.stranger != nil {
			l.stranger(c.RemoteAddr().String(), why)
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			refuseStranger(c)
		}()
	}
}

// refuseStranger answers a connection 403 with StrangerMessage, lets the
// client read it, and closes it.
var refuseStranger = accept.ForbidHTTP(StrangerMessage)
