package engine

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcAddr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0100007F:0C3A", "127.0.0.1:3130"},
		{"0101FEA9:0050", "169.254.1.1:80"},
		{"0000000000000000FFFF00000100007F:0C3A", "127.0.0.1:3130"}, // v4-mapped, in tcp6
		{"00000000000000000000000001000000:0016", "[::1]:22"},
	} {
		got, err := procAddr(c.in)
		if err != nil || got.String() != c.want {
			t.Errorf("procAddr(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "01007F:0C3A", "zz00007F:0C3A", "0100007F:10000"} {
		if got, err := procAddr(bad); err == nil {
			t.Errorf("procAddr(%q) = %v, want an error", bad, got)
		}
	}
}

func TestFindSocket(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0C3A 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:A000 0100007F:0C3A 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:A001 0100007F:0C3A 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000
`
	server := netip.MustParseAddrPort("127.0.0.1:3130")
	ino, found, err := findSocket(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:40960"), server)
	if err != nil || !found || ino != 222 {
		t.Errorf("the established client: %d, %v, %v; want 222", ino, found, err)
	}
	// In TIME_WAIT the socket is no process's.
	if ino, found, err := findSocket(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:40961"), server); err != nil || found {
		t.Errorf("a socket in TIME_WAIT: %d, %v, %v; want not found", ino, found, err)
	}
	if _, found, err := findSocket(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:1"), server); err != nil || found {
		t.Errorf("no such socket: %v, %v; want not found", found, err)
	}
	if _, _, err := findSocket(strings.NewReader("header\n 0: nonsense here a b c d e f g\n"), server, server); err == nil {
		t.Error("a malformed table: no error")
	}
}

// TestEngineOnly: the registry proxy's listener hands on a connection the
// engine's process holds, and answers 403 to one another process made, or
// any once the engine has exited.
func TestEngineOnly(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	self := procOf(t, os.Getpid())
	defer self.close()
	var strangers []string
	l := engineOnly{Listener: ln, proc: self, stranger: func(client string, why error) {
		strangers = append(strangers, client+": "+why.Error())
	}}

	// This process, "the engine", connects: handed on.
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	got.Close()
	if len(strangers) != 0 {
		t.Fatalf("the engine's own connection was refused: %q", strangers)
	}

	// Another process connects: refused with the message, then the
	// engine's next connection is handed on.
	out := make(chan string, 1)
	go func() { out <- dialHelper(t, ln.Addr().String()) }()
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	answer := <-out
	if !strings.HasPrefix(answer, "HTTP/1.1 403 Forbidden\r\n") || !strings.HasSuffix(answer, "\r\n\r\n"+StrangerMessage) {
		t.Errorf("another process was answered %q, want 403 and the message", answer)
	}
	c2, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if len(strangers) != 1 || !strings.Contains(strangers[0], "is not the engine's") {
		t.Errorf("strangers heard: %q, want the other process's connection", strangers)
	}

	// An engine that has exited holds nothing: this process's connection
	// is refused too, even where a new process got its pid.
	done := exec.Command("true")
	if err := done.Start(); err != nil {
		t.Fatal(err)
	}
	gone := procOf(t, done.Process.Pid)
	defer gone.close()
	done.Wait()
	gone.pid = os.Getpid()
	c3, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if why := gone.made(a); why == nil || !strings.Contains(why.Error(), "exited") {
		t.Errorf("an exited engine's pid: %v, want refused as exited", why)
	}
}

// procOf is an engineProc of pid, through a pidfd as the launcher sends it.
func procOf(t *testing.T, pid int) *engineProc {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open: %v", err)
	}
	p, err := newEngineProc(fd)
	if err != nil {
		t.Fatal(err)
	}
	if p.pid != pid {
		t.Fatalf("the pidfd's pid: %d, want %d", p.pid, pid)
	}
	return p
}

// dialHelper connects to addr from another process (this test binary,
// as the helper) and returns what it read.
func dialHelper(t *testing.T, addr string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestDialHelper$")
	cmd.Env = append(os.Environ(), "STOCKADE_TEST_DIAL="+addr)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "helper: " + err.Error()
	}
	return out.String()
}

// TestDialHelper is dialHelper's other process.
func TestDialHelper(t *testing.T) {
	addr := os.Getenv("STOCKADE_TEST_DIAL")
	if addr == "" {
		return // run as TestEngineOnly's other process only
	}
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		os.Exit(2)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	os.Stdout.Write(b)
	os.Exit(0)
}
