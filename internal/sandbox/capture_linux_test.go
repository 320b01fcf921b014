//go:build linux

package sandbox

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestCaptureOff: what failed of the capture, the rules or the route, and
// the kernel's errno, become the supervisor's warning; a socket init could
// not make is read from the shared page.
func TestCaptureOff(t *testing.T) {
	tests := []struct {
		what  uint16
		errno unix.Errno
		want  string // "" for no error
	}{
		{0, 0, ""},
		{captureRules, unix.EOPNOTSUPP, "adding the nftables capture rules: operation not supported; the kernel needs nf_tables with nat and redirect"},
		{captureRules, unix.ENOENT, "nft_nat and nft_redir modules"},
		{captureRoute, unix.ENETDOWN, "adding the route through lo: network is down"},
	}
	for _, tt := range tests {
		err := captureOff(int(tt.what), tt.errno)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%d %v: %v, want none", tt.what, tt.errno, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%d %v: %v, want one with %q", tt.what, tt.errno, err, tt.want)
		}
		a, err := newArena(4096)
		if err != nil {
			t.Fatal(err)
		}
		binary.NativeEndian.PutUint16(a.shared[4:], tt.what)
		binary.NativeEndian.PutUint16(a.shared[6:], uint16(tt.errno))
		if what, errno := a.socketOff(); what != int(tt.what) || errno != tt.errno {
			t.Errorf("%d %v: socketOff = %d, %v", tt.what, tt.errno, what, errno)
		}
		a.free()
	}
}

// TestCaptureRedirects runs a sandbox with its listeners and connects,
// from the command, to addresses outside over IPv4 and IPv6: each
// connection arrives on its capture listener, in the supervisor, with its
// original destination; and UDP to an address outside is refused. With
// rules the kernel refuses, the supervisor hears why (OnCaptureOff), the
// command runs, and nothing is captured.
func TestCaptureRedirects(t *testing.T) {
	requireSandbox(t)
	const script = `import errno, socket
for fam, addr in ((socket.AF_INET, ("198.51.100.99", 9)), (socket.AF_INET6, ("2001:db8::99", 9))):
    try:
        s = socket.socket(fam); s.settimeout(10); s.connect(addr); s.recv(1); print("CONNECTED")
    except OSError as e: print(errno.errorcode.get(e.errno, str(e)))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
try: u.connect(("198.51.100.99", 9)); u.send(b"x"); u.recv(1); print("ANSWERED")
except OSError as e: print(errno.errorcode.get(e.errno, str(e)))
`
	for _, tc := range []struct {
		name    string
		rules   func([]byte) []byte
		want    string // the command's output
		origins []string
		off     string // in the OnCaptureOff error
	}{
		{"captured", nil, "CONNECTED\nCONNECTED\nECONNREFUSED\n", []string{"198.51.100.99:9", "[2001:db8::99]:9"}, ""},
		{"rules refused", refusedRules, "ENETUNREACH\nENETUNREACH\nENETUNREACH\n", nil, "adding the nftables capture rules: invalid argument"},
		// The supervisor sends the rules while init builds the view:
		// when that takes longer than the view, the command still
		// starts only once they are in (setup reads the result before
		// "placed"), and its first connection is captured.
		{"rules late", lateRules, "CONNECTED\nCONNECTED\nECONNREFUSED\n", []string{"198.51.100.99:9", "[2001:db8::99]:9"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testCaptureRules = tc.rules
			defer func() { testCaptureRules = nil }()
			spec, err := NewSpec(Config{ID: "capture1", Workdir: t.TempDir(), Home: "/nonexistent-home",
				Argv: []string{"/usr/bin/python3", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
			if err != nil {
				t.Fatal(err)
			}
			spec.Listen = true
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			devnull, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			defer devnull.Close()
			origins := make(chan string, 4)
			var off error
			code, err := Run(spec, Options{Stdin: devnull, Stdout: out, Stderr: out,
				OnListeners: func(files []*os.File) error {
					for i, f := range files {
						if Listeners[i].Name == "capture" {
							go acceptOrigins(t, f, origins)
						} else {
							f.Close()
						}
					}
					return nil
				},
				OnCaptureOff: func(err error) { off = err },
			})
			if err != nil || code != 0 {
				t.Fatalf("Run = %d, %v", code, err)
			}
			b, _ := os.ReadFile(out.Name())
			if string(b) != tc.want {
				t.Errorf("the command printed %q, want %q", b, tc.want)
			}
			var got []string
			for range tc.origins {
				select {
				case o := <-origins:
					got = append(got, o)
				case <-time.After(10 * time.Second):
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.origins, " ") {
				t.Errorf("original destinations %q, want %q", got, tc.origins)
			}
			if (off == nil) != (tc.off == "") || off != nil && !strings.Contains(off.Error(), tc.off) {
				t.Errorf("OnCaptureOff heard %v, want %q", off, tc.off)
			}
		})
	}
}

// acceptOrigins accepts on a capture listener and sends each connection's
// original destination, then closes it.
func acceptOrigins(t *testing.T, f *os.File, origins chan<- string) {
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Error(err)
		return
	}
	defer l.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		raw, _ := c.(*net.TCPConn).SyscallConn()
		var sa [28]byte
		level := unix.SOL_IP
		if c.LocalAddr().(*net.TCPAddr).IP.To4() == nil {
			level = unix.SOL_IPV6
		}
		var gerr error
		raw.Control(func(fd uintptr) {
			n := uint32(len(sa))
			_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), 80, uintptr(unsafe.Pointer(&sa[0])), uintptr(unsafe.Pointer(&n)), 0)
			if e != 0 {
				gerr = e
			}
		})
		c.Close()
		if gerr != nil {
			origins <- gerr.Error()
			continue
		}
		port := uint16(sa[2])<<8 | uint16(sa[3])
		if level == unix.SOL_IP {
			origins <- netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port).String()
		} else {
			origins <- netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa[8:24])), port).String()
		}
	}
}

// lateRules holds the rules back long after init has built the view.
func lateRules(rules []byte) []byte {
	time.Sleep(300 * time.Millisecond)
	return rules
}

// refusedRules turns the first message after the batch's start into one
// of a type nf_tables does not have: the kernel refuses the batch (EINVAL).
func refusedRules(rules []byte) []byte {
	b := append([]byte(nil), rules...)
	first := binary.NativeEndian.Uint32(b)
	binary.NativeEndian.PutUint16(b[first+4:], 10<<8|0xff)
	return b
}

// TestCaptureSocketRefused: when the kernel refuses init the capture's
// NETLINK_ROUTE socket (here a seccomp filter on the thread init is
// cloned from), the command still runs, without capture (and with no
// rules: the supervisor sends nothing) and with no socket of init's (the
// copy of a listener in the refused socket's slot), and the warning names
// the route,
// not the nftables rules, with the errno.
func TestCaptureSocketRefused(t *testing.T) {
	requireSandbox(t)
	if _, err := hostFacts(); err != nil {
		t.Fatal(err)
	}
	const script = `import errno, os, socket
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + fd).startswith("socket:"): print("SOCKET", fd)
    except OSError: pass
try:
    s = socket.socket(); s.settimeout(10); s.connect(("198.51.100.99", 9)); print("CONNECTED")
except OSError as e: print(errno.errorcode.get(e.errno, str(e)))
`
	spec, err := NewSpec(Config{ID: "capture2", Workdir: t.TempDir(), Home: "/nonexistent-home",
		Argv: []string{"/usr/bin/python3", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Listen = true
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	devnull, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	defer devnull.Close()
	type result struct {
		code int
		err  error
		off  error
	}
	done := make(chan result, 1)
	go func() {
		// The filter stays on this thread, which goes with the
		// goroutine (no UnlockOSThread); the runtime makes its new
		// threads from a template thread, never from a locked one.
		runtime.LockOSThread()
		if err := refuseNetlinkRoute(); err != nil {
			done <- result{err: err}
			return
		}
		var r result
		r.code, r.err = Run(spec, Options{Stdin: devnull, Stdout: out, Stderr: out,
			OnCaptureOff: func(err error) { r.off = err }})
		done <- r
	}()
	r := <-done
	if r.err != nil || r.code != 0 {
		t.Fatalf("Run = %d, %v", r.code, r.err)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "ENETUNREACH\n" {
		t.Errorf("the command printed %q, want ENETUNREACH", b)
	}
	const want = "adding the route through lo: protocol not supported"
	if r.off == nil || !strings.Contains(r.off.Error(), want) {
		t.Errorf("OnCaptureOff heard %v, want %q", r.off, want)
	}
}

// refuseNetlinkRoute installs, on the calling thread only, a seccomp
// filter that fails socket(AF_NETLINK, *, NETLINK_ROUTE) with
// EPROTONOSUPPORT.
func refuseNetlinkRoute() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// struct seccomp_data: nr at 0, args at 16 (the low word first on
	// a little-endian machine, which both amd64 and arm64 are).
	prog := []unix.SockFilter{
		{Code: ld, K: 0},
		{Code: jeq, Jt: 0, Jf: 5, K: unix.SYS_SOCKET},
		{Code: ld, K: 16},
		{Code: jeq, Jt: 0, Jf: 3, K: unix.AF_NETLINK},
		{Code: ld, K: 32},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.NETLINK_ROUTE},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return os.NewSyscallError("seccomp", e)
	}
	return nil
}
