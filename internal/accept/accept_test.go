package accept

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// script is a listener whose Accept returns the errors it is given, then a
// connection.
type script struct {
	net.Listener
	errs []error
}

func (s *script) Accept() (net.Conn, error) {
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return nil, err
	}
	c, _ := net.Pipe()
	return c, nil
}

func (s *script) Close() error { return nil }

func opErr(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

func TestAcceptRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		errs    []error
		wantErr error // nil: a connection after the retries
	}{
		{"emfile", []error{opErr(syscall.EMFILE), opErr(syscall.EMFILE), opErr(syscall.EMFILE)}, nil},
		{"enfile", []error{opErr(syscall.ENFILE)}, nil},
		{"enobufs", []error{opErr(syscall.ENOBUFS)}, nil},
		{"enomem", []error{opErr(syscall.ENOMEM)}, nil},
		{"econnaborted", []error{opErr(syscall.ECONNABORTED)}, nil},
		{"closed", []error{net.ErrClosed}, net.ErrClosed},
		{"einval", []error{opErr(syscall.EINVAL)}, syscall.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Listen(&script{errs: tc.errs}).Accept()
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Accept: %v, want a connection after the retries", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Accept: %v, %v; want %v", c, err, tc.wantErr)
			}
		})
	}
}

func TestCloseEndsBackoff(t *testing.T) {
	errs := make([]error, 100)
	for i := range errs {
		errs[i] = opErr(syscall.EMFILE)
	}
	l := Listen(&script{errs: errs})
	done := make(chan error)
	go func() { _, err := l.Accept(); done <- err }()
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still retries after Close")
	}
}

// TestRecoversFromEMFILE runs the process out of descriptors for real: a
// bare listener's Accept fails with EMFILE, the wrapped one waits and
// returns the connection once a descriptor is free.
func TestRecoversFromEMFILE(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lim := old
	lim.Cur = 128
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	fill := func() []*os.File {
		var held []*os.File
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				if !errors.Is(err, syscall.EMFILE) {
					t.Fatal(err)
				}
				return held
			}
			held = append(held, f)
		}
	}
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	// dialFull connects with the last free descriptor, so that the
	// server side has none to accept with.
	dialFull := func() (net.Conn, []*os.File) {
		held := fill()
		held[len(held)-1].Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c, held[:len(held)-1]
	}

	c, held := dialFull()
	if _, err := ln.Accept(); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("bare Accept with no descriptor left: %v, want EMFILE (the test does not exhaust)", err)
	}
	got := make(chan error, 1)
	go func() {
		conn, err := Listen(ln).Accept()
		if conn != nil {
			conn.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("wrapped Accept returned %v while out of descriptors; want it to wait", err)
	case <-time.After(100 * time.Millisecond):
	}
	closeAll(held)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("wrapped Accept after descriptors were freed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wrapped Accept did not recover once descriptors were freed")
	}
	c.Close()
}

// TestCap: the cap's connections are served, the next are refused with an
// HTTP answer and counted, OnFull fires once, and a closed connection frees
// its place.
func TestCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Int32
	c := NewCap(2, func(max int) {
		if max != 2 {
			t.Errorf("OnFull(%d), want 2", max)
		}
		full.Add(1)
	})
	l := c.Listen(ln, RefuseHTTP("stockade: too many connections (cap 2)"))
	defer l.Close()
	served := make(chan net.Conn, 10)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			served <- conn
		}
	}()
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	accepted := func() net.Conn {
		select {
		case conn := <-served:
			return conn
		case <-time.After(5 * time.Second):
			t.Fatal("a connection under the cap was not served")
			return nil
		}
	}
	refused := func() {
		conn := dial()
		io.WriteString(conn, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("a connection over the cap: %v, want a 503", err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "cap 2") {
			t.Fatalf("over the cap: %s %q, want 503 naming the cap", resp.Status, body)
		}
	}
	dial()
	first := accepted()
	dial()
	accepted()
	refused()
	refused()
	if got := c.Refused(); got != 2 {
		t.Errorf("Refused() = %d, want 2", got)
	}
	if got := full.Load(); got != 1 {
		t.Errorf("OnFull called %d times, want once", got)
	}
	if got := c.Open(); got != 2 {
		t.Errorf("Open() = %d, want 2", got)
	}
	first.Close()
	dial()
	accepted()
	select {
	case conn := <-served:
		t.Fatalf("a connection over the cap was served: %v", conn.RemoteAddr())
	default:
	}
}
