package progress

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// screen is what a pty's master read, as it arrives.
type screen struct {
	mu   sync.Mutex
	b    bytes.Buffer
	done chan struct{}
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// onPTY returns a Line on the slave of a new pty of cols columns, what its
// master reads, and a function that closes the slave and returns all the
// master read.
func onPTY(t *testing.T, cols uint16, quiet bool) (*Line, *screen, func() string) {
	t.Helper()
	m, sl, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	pty.Setsize(m, &pty.Winsize{Rows: 24, Cols: cols})
	scr := &screen{done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			scr.mu.Lock()
			scr.b.Write(buf[:n])
			scr.mu.Unlock()
			if err != nil {
				close(scr.done)
				return
			}
		}
	}()
	return New(sl, quiet), scr, func() string {
		sl.Close()
		<-scr.done
		return scr.String()
	}
}

// TestLine: on a terminal, each step rewrites the one line, a step past a
// second shows its seconds, and Done erases the line; a line wider than
// the terminal is cut.
func TestLine(t *testing.T) {
	l, scr, read := onPTY(t, 80, false)
	l.Step("preparing claude's sandbox HOME")
	l.Step("starting the container engine")
	counted := regexp.MustCompile(`… [0-9]+s$`)
	for deadline := time.Now().Add(10 * time.Second); !counted.MatchString(scr.String()) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the line's own clock is under test: nothing else to wait on
	}
	l.Done()
	l.Done()
	// A loaded machine may deliver a tick late, and the test may look
	// late: the count may start past 1 and more than one may show, but
	// each is the step's line with a larger count, and Done erases it.
	const head = "\r\x1b[Kstockade: preparing claude's sandbox HOME…\r\x1b[Kstockade: starting the container engine…"
	got := read()
	rest, ok := strings.CutPrefix(got, head)
	counts := regexp.MustCompile(`^(?:\r\x1b\[Kstockade: starting the container engine… ([0-9]+)s)+\r\x1b\[K$`)
	if !ok || !counts.MatchString(rest) {
		t.Fatalf("on a terminal:\n got %q\nwant %q, a count or more, and an erase", got, head)
	}
	last := 0
	for _, m := range regexp.MustCompile(`… ([0-9]+)s`).FindAllStringSubmatch(rest, -1) {
		n, _ := strconv.Atoi(m[1])
		if n <= last {
			t.Errorf("on a terminal: the counts do not rise from 1: %q", rest)
		}
		last = n
	}

	l, _, read = onPTY(t, 20, false)
	l.Step("preparing claude's sandbox HOME")
	l.Done()
	if got, want := read(), "\r\x1b[Kstockade: preparing\r\x1b[K"; got != want {
		t.Errorf("on 20 columns: got %q, want %q", got, want)
	}
}

// TestNothing: not a terminal, or quiet: no Line, and nothing written.
func TestNothing(t *testing.T) {
	l, _, read := onPTY(t, 80, true)
	if l != nil {
		t.Error("quiet gave a Line")
	}
	l.Step("x")
	l.Done()
	if got := read(); got != "" {
		t.Errorf("quiet wrote %q", got)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if l := New(w, false); l != nil {
		t.Error("a pipe gave a Line")
	}
	w.Close()
	if b, _ := io.ReadAll(r); len(b) > 0 || strings.Contains(string(b), "stockade") {
		t.Errorf("a pipe got %q", b)
	}
}
