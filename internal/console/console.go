// Package console gives a sandboxed command a terminal of its own. The
// command never receives the user's terminal: init opens a fresh
// pseudo-terminal in the sandbox's own devpts instance, hands the master side
// to the supervisor, and the supervisor relays it to the user's terminal,
// which is put in raw mode for the duration. That keeps TIOCSTI-style
// injection into the user's shell out of reach even if seccomp were missing,
// makes ttyname() inside name a device that exists there (/dev/pts/0), and
// lets the window size follow.
//
// When the user's stdio is not a terminal, a pipe or a socket passes
// through unchanged; anything else (a named FIFO included) (a terminal, a file, a device such as
// /dev/null) is replaced by a pipe relay, and a directory is refused. A
// descriptor of a file of the host's is never handed in: fchmod or fchown
// through it reached the host's own inode past the sandbox's read-only
// binds (the host's /dev/null, under a root supervisor, or from a
// container it was passed to), and openat below a directory reached past
// its masks.
//
// Everything relayed to a terminal of the user's goes through the caller's
// output wrapper (termfilter by default), so that the command's escape
// sequences cannot reach past the screen, and what it did to the screen is
// undone once it is gone (Settle), before stockade writes its own lines
// there.
package console

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/stockade-dev/stockade/internal/termstate"
)

// Console is the stdio handed to the sandbox and the relay behind it.
type Console struct {
	// Stdin, Stdout and Stderr are what init gets. With TTY they are
	// /dev/null: the command's terminal comes from inside (see Attach).
	Stdin, Stdout, Stderr *os.File
	TTY                   bool

	in, out *os.File // the user's terminal, with TTY
	wrap    func(io.Writer) io.Writer
	screens []*screen // the relays to a terminal of the user's
	closers []io.Closer
	started bool
	closed  sync.Once
	settled sync.Once // Settle's writes
	restore func()
	wg      sync.WaitGroup
	stop    chan struct{}
}

// Open sets up the command's stdio from the user's. wrap, when not nil,
// wraps every writer to a terminal of the user's: the command's output
// reaches the terminal through what wrap returns.
func Open(in, out, errw *os.File, wrap func(io.Writer) io.Writer) (*Console, error) {
	if wrap == nil {
		wrap = func(w io.Writer) io.Writer { return w }
	}
	c := &Console{stop: make(chan struct{}), restore: func() {}, wrap: wrap}
	if term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd())) {
		devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		c.closers = append(c.closers, devnull)
		c.Stdin, c.Stdout, c.Stderr, c.TTY = devnull, devnull, devnull, true
		c.in, c.out = in, out
		return c, nil
	}
	var err error
	if c.Stdin, err = c.relay(in, 0); err != nil {
		c.Close()
		return nil, err
	}
	if c.Stdout, err = c.relay(out, 1); err != nil {
		c.Close()
		return nil, err
	}
	if c.Stderr, err = c.relay(errw, 2); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Attach takes the master side of the command's pseudo-terminal, sizes it
// like the user's terminal, puts the user's terminal in raw mode and relays
// both ways until the command is gone.
func (c *Console) Attach(master *os.File) error {
	c.closers = append(c.closers, master)
	if err := pty.InheritSize(c.in, master); err != nil {
		return err
	}
	if state, err := term.MakeRaw(int(c.in.Fd())); err == nil {
		c.restore = func() { term.Restore(int(c.in.Fd()), state) }
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-winch:
				pty.InheritSize(c.in, master)
			case <-c.stop:
				signal.Stop(winch)
				return
			}
		}
	}()
	go io.Copy(master, c.in) // ends with the process; the user's stdin may never close
	sc := c.screen(c.out)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(sc.done)
		io.Copy(c.wrap(sc), master) // EIO once every holder of the slave is gone
	}()
	return nil
}

// screen follows what the relayed output did to one of the user's
// terminals (package termstate): a command that ends with the alternate
// screen on, its text concealed (SGR 8) or drawn black on black, a scroll
// region or a character set of its own, would hide the findings stockade
// writes after it. The state is read from what reached the terminal,
// after the wrapper.
type screen struct {
	f    *os.File
	st   termstate.State
	done chan struct{} // closed when the relay has ended
}

func (s *screen) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.st.Write(p[:n])
	return n, err
}

func (c *Console) screen(f *os.File) *screen {
	sc := &screen{f: f, done: make(chan struct{})}
	c.screens = append(c.screens, sc)
	return sc
}

// Settle waits for the relays to the user's terminals to end (the command
// and init are gone: nothing holds their other end) and writes to each
// terminal what undoes the modes the command's output left set, then a
// move to the start of a clean line below what it drew (termstate's
// Detach: the session client does the same). Call it
// once the sandbox is gone, before stockade reports on the terminal what
// the checks after the run found. Without a terminal it does nothing and
// waits for nothing. Close does it too; it may be called more than once.
func (c *Console) Settle() {
	c.Started()
	for _, sc := range c.screens {
		<-sc.done
	}
	c.settled.Do(func() {
		// The command's stdout and stderr are most often one terminal:
		// one move to a clean line below what both drew, so that
		// stockade's lines neither land where the command left the
		// cursor (on text it wrote to look like them) nor twice.
		for _, same := range byTerminal(c.screens) {
			sts := make([]*termstate.State, len(same))
			for i, sc := range same {
				sts[i] = &sc.st
			}
			if b := termstate.DetachAll(sts...); len(b) > 0 {
				same[0].f.Write(b)
			}
		}
	})
}

// byTerminal groups the screens by the terminal they write to, in order.
func byTerminal(scs []*screen) [][]*screen {
	type id struct{ dev, rdev, ino uint64 }
	var groups [][]*screen
	seen := map[id]int{}
	for _, sc := range scs {
		var st unix.Stat_t
		if unix.Fstat(int(sc.f.Fd()), &st) != nil {
			groups = append(groups, []*screen{sc})
			continue
		}
		k := id{uint64(st.Dev), uint64(st.Rdev), st.Ino}
		if i, ok := seen[k]; ok {
			groups[i] = append(groups[i], sc)
			continue
		}
		seen[k] = len(groups)
		groups = append(groups, []*screen{sc})
	}
	return groups
}

// Check refuses stdio that cannot be handed to a command: a directory
// (whose descriptor would open what is below it past the sandbox's view).
// Open refuses it too; Check says so before anything is made.
func Check(in, out, errw *os.File) error {
	for i, f := range []*os.File{in, out, errw} {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return fmt.Errorf("the command's %s: %w", stdioNames[i], os.NewSyscallError("fstat", err))
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return fmt.Errorf("the command's %s is a directory; give it a file, a pipe or nothing", stdioNames[i])
		}
	}
	return nil
}

var stdioNames = [...]string{"stdin", "stdout", "stderr"}

// relay returns f itself when it is a pipe or a socket, else a pipe end
// whose other side is copied to or from f; /dev/null is not even read or
// written.
func (c *Console) relay(f *os.File, i int) (*os.File, error) {
	input := i == 0
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("the command's %s: %w", stdioNames[i], os.NewSyscallError("fstat", err))
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK:
		// An anonymous pipe or a socket, not a FIFO of the host's
		// filesystem (mkfifo), whose inode fchmod would change.
		if anonymous(f) {
			return f, nil
		}
	case unix.S_IFDIR:
		return nil, fmt.Errorf("the command's %s is a directory; give it a file, a pipe or nothing", stdioNames[i])
	}
	null := st.Mode&unix.S_IFMT == unix.S_IFCHR && uint64(st.Rdev) == unix.Mkdev(1, 3)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if input {
		c.closers = append(c.closers, r)
		if null {
			w.Close() // end of file at once, as /dev/null reads
			return r, nil
		}
		go func() { io.Copy(w, f); w.Close() }()
		return r, nil
	}
	// Chosen here, not in the copy: the caller may close f once the
	// command is gone, while the copy still runs.
	var dst io.Writer = io.Discard
	var sc *screen
	if !null {
		dst = f
		if term.IsTerminal(int(f.Fd())) {
			sc = c.screen(f)
			dst = c.wrap(sc)
		}
	}
	c.closers = append(c.closers, w)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if sc != nil {
			defer close(sc.done)
		}
		io.Copy(dst, r)
		r.Close()
	}()
	return w, nil
}

// Started is called once init holds its stdio: the console's copies of the
// sandbox-side pipe ends are closed, so that the relay sees end-of-file when
// the command is gone.
func (c *Console) Started() {
	if c.started || c.TTY {
		return
	}
	c.started = true
	for _, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr} {
		for i, cl := range c.closers {
			if cl == f {
				f.Close()
				c.closers = append(c.closers[:i], c.closers[i+1:]...)
				break
			}
		}
	}
}

// Close waits for output to drain and restores the user's terminal. It may
// be called more than once.
func (c *Console) Close() {
	c.closed.Do(func() {
		c.Started()
		c.wg.Wait()
		c.Settle()
		close(c.stop)
		for _, cl := range c.closers {
			cl.Close()
		}
		c.restore()
	})
}
