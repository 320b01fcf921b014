package tripwire

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// timeout bounds every wait for Watch; it is a failure bound, never a pause.
const timeout = 20 * time.Second

type watching struct {
	changes chan Change
	checked chan struct{}
	done    chan error
	cancel  context.CancelFunc
}

// startWatch runs s.Watch and returns once its watches are in place.
func startWatch(t *testing.T, s *Snapshot) *watching {
	t.Helper()
	ready := make(chan struct{})
	w := &watching{changes: make(chan Change, 4), checked: make(chan struct{}, 64), done: make(chan error, 1)}
	s.watching = func() { close(ready) }
	s.checked = func() {
		select {
		case w.checked <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { w.done <- s.Watch(ctx, func(c Change) { w.changes <- c }) }()
	t.Cleanup(func() { w.stop(t) })
	select {
	case <-ready:
	case err := <-w.done:
		w.done <- err
		t.Fatalf("Watch returned before it was watching: %v", err)
	case <-time.After(timeout):
		t.Fatal("Watch did not start")
	}
	return w
}

func (w *watching) next(t *testing.T) Change {
	t.Helper()
	select {
	case c := <-w.changes:
		return c
	case err := <-w.done:
		w.done <- err
		select { // onChange runs before Watch returns
		case c := <-w.changes:
			return c
		default:
		}
		t.Fatalf("Watch returned %v without reporting a change", err)
	case <-time.After(timeout):
		t.Fatalf("no change reported within %v", timeout)
	}
	return Change{}
}

// stop cancels the watch and waits for Watch to return.
func (w *watching) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err
		if err != nil {
			t.Errorf("Watch: %v", err)
		}
	case <-time.After(timeout):
		t.Errorf("Watch did not return within %v of its context ending", timeout)
	}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func TestWatch(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			if m.root && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			dir, roots := fixture(t)
			s, err := Take(roots)
			must(t, err)
			w := startWatch(t, s)
			t.Cleanup(func() { // the stopped session's Restore
				if _, err := s.Restore(); err != nil && m.cannotRestore == "" {
					t.Errorf("Restore after Watch: %v", err)
				}
			})
			m.do(t, dir)
			c := w.next(t)
			kinds := m.watch
			if kinds == nil {
				kinds = []string{m.kind}
			}
			if m.kind == ModeChanged { // a directory the user cannot list is also Modified
				kinds = append(kinds, Modified)
			}
			want := filepath.Join(dir, m.path)
			if m.cannotRestore != "" { // a parent changed: any path below it will do
				want = filepath.Dir(want)
			}
			if !slices.Contains(kinds, c.Kind) || !within(c.Path, want) {
				t.Fatalf("Watch reported %v, want %q at or below %s", c, kinds, want)
			}
			if err := <-w.done; err != nil {
				t.Fatalf("Watch after reporting: %v", err)
			}
			w.done <- nil
		})
	}
}

// TestWatchIgnoresReads: reads, a write-open that writes nothing, a new
// timestamp and uncovered files make events or none, but no report: the first
// change reported is the one made after them.
func TestWatchIgnoresReads(t *testing.T) {
	dir, roots := fixture(t)
	s, err := Take(roots)
	must(t, err)
	w := startWatch(t, s)

	for _, p := range []string{"AGENTS.md", ".env", ".git/config", ".git/hooks/pre-commit", ".git/hooks/link"} {
		_, err := os.ReadFile(filepath.Join(dir, p))
		must(t, err)
	}
	_, err = os.ReadDir(filepath.Join(dir, ".git/hooks"))
	must(t, err)
	f, err := os.OpenFile(filepath.Join(dir, "AGENTS.md"), os.O_WRONLY, 0)
	must(t, err)
	must(t, f.Close()) // IN_CLOSE_WRITE, no change
	must(t, os.Chtimes(filepath.Join(dir, ".git/hooks/pre-commit"), time0, time0))
	write(t, filepath.Join(dir, "notes.txt"), "not covered\n")
	write(t, filepath.Join(dir, ".git/HEAD"), "ref: refs/heads/main\n")

	write(t, filepath.Join(dir, "CLAUDE.md"), "the change\n")
	if c := w.next(t); c.Path != filepath.Join(dir, "CLAUDE.md") || c.Kind != Created {
		t.Fatalf("first change reported = %v, want CLAUDE.md created", c)
	}
	w.stop(t)
	if n := len(w.changes); n != 0 {
		t.Errorf("%d more changes reported after the first", n)
	}
}

// TestWatchReplacedSubdir swaps a directory of a tree for an identical copy
// (no change) and then writes into the copy: the new directory must be
// watched too.
func TestWatchReplacedSubdir(t *testing.T) {
	dir, roots := fixture(t)
	copyDir := filepath.Join(dir, "src/copy")
	must(t, os.Mkdir(copyDir, 0o755))
	must(t, os.WriteFile(filepath.Join(copyDir, "helper"), []byte("helper\n"), 0o600))
	s, err := Take(roots)
	must(t, err)
	w := startWatch(t, s)

	sub := filepath.Join(dir, ".git/hooks/sub")
	must(t, unix.Renameat2(unix.AT_FDCWD, copyDir, unix.AT_FDCWD, sub, unix.RENAME_EXCHANGE))
	select {
	case <-w.checked:
	case c := <-w.changes:
		t.Fatalf("swapping in an identical directory reported %v", c)
	case <-time.After(timeout):
		t.Fatal("the swap was not looked at")
	}
	must(t, os.WriteFile(filepath.Join(sub, "helper"), []byte("evil!!\n"), 0))
	if c := w.next(t); c.Path != filepath.Join(sub, "helper") || c.Kind != Modified {
		t.Fatalf("Watch reported %v, want %s modified", c, filepath.Join(sub, "helper"))
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents)
}

// TestWatchNoLeak: Watch returns when its context ends and leaves no
// descriptor behind.
func TestWatchNoLeak(t *testing.T) {
	dir, roots := fixture(t)
	s, err := Take(roots)
	must(t, err)
	startWatch(t, s).stop(t) // the runtime's poller opens its descriptors once
	before := openFDs(t)
	for range 3 {
		startWatch(t, s).stop(t)
	}
	w := startWatch(t, s)
	write(t, filepath.Join(dir, ".git/hooks/x"), "x")
	w.next(t)
	w.stop(t)
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}
