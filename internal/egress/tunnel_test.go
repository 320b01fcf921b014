package egress

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

func countFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting descriptors: %v", err)
	}
	return len(entries)
}

// TestManyTunnels holds 1000 CONNECT tunnels open at once, echoes through
// each, and checks that Close gives every descriptor back.
func TestManyTunnels(t *testing.T) {
	const n = 1000
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	base := countFDs(t)
	// Torn down explicitly, not with t.Cleanup, so that the count after it
	// means something.
	a := &auditLog{}
	p := New(Config{Session: "s1", Rules: mustRules(t, ModeDeny, []string{"127.0.0.1"}, nil), Audit: a.record})
	echo, stopEcho := echoServer(t)
	proxyAddr, stopProxy := serveOn(t, p.ServeHTTPProxy)

	var done, opened sync.WaitGroup
	errs := make(chan error, n)
	ready := make(chan struct{})
	opened.Add(n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, c, br, err := dialConnect(proxyAddr, echo)
			opened.Done()
			if err != nil {
				errs <- fmt.Errorf("tunnel %d: %w", i, err)
				return
			}
			defer c.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("tunnel %d: status %d", i, resp.StatusCode)
				return
			}
			<-ready // every tunnel is open at this point
			msg := fmt.Sprintf("tunnel %04d", i)
			if _, err := io.WriteString(c, msg); err != nil {
				errs <- fmt.Errorf("tunnel %d: %w", i, err)
				return
			}
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
				errs <- fmt.Errorf("tunnel %d: echo %q, %v", i, buf, err)
			}
		}()
	}
	opened.Wait()
	close(ready)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p.Close()
	stopProxy()
	stopEcho()
	if got := len(a.find(EventConnection)); got != n {
		t.Errorf("%d connection events, want %d", got, n)
	}
	if got := countFDs(t); got > base {
		t.Errorf("%d descriptors open after Close, %d before", got, base)
	}
}
