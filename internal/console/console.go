// Package console gives a sandboxed command a terminal of its own. The
// command never receives the user's terminal: a fresh pseudo-terminal is
// opened, its slave side becomes the command's stdin, stdout and stderr, and
// the master side is relayed to the user's terminal, which is put in raw mode
// for the duration. That keeps TIOCSTI-style injection into the user's shell
// out of reach even if seccomp were missing, and lets the window size follow.
//
// When the user's stdio is not a terminal, stdio passes through unchanged,
// except that any descriptor which is a terminal is replaced by a pipe relay.
package console

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// Console is the stdio handed to the sandbox and the relay behind it.
type Console struct {
	Stdin, Stdout, Stderr *os.File // what the command gets
	TTY                   bool     // Stdin/Stdout/Stderr are one PTY slave

	closers []io.Closer
	started bool
	closed  sync.Once
	restore func()
	wg      sync.WaitGroup
	stop    chan struct{}
}

// Open sets up the command's stdio from the user's.
func Open(in, out, errw *os.File) (*Console, error) {
	c := &Console{stop: make(chan struct{}), restore: func() {}}
	if term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd())) {
		return c, c.openPTY(in, out)
	}
	var err error
	if c.Stdin, err = c.relay(in, true); err != nil {
		c.Close()
		return nil, err
	}
	if c.Stdout, err = c.relay(out, false); err != nil {
		c.Close()
		return nil, err
	}
	if c.Stderr, err = c.relay(errw, false); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Console) openPTY(in, out *os.File) error {
	master, slave, err := pty.Open()
	if err != nil {
		return err
	}
	c.closers = append(c.closers, master)
	c.Stdin, c.Stdout, c.Stderr, c.TTY = slave, slave, slave, true
	pty.InheritSize(in, master)
	state, err := term.MakeRaw(int(in.Fd()))
	if err == nil {
		c.restore = func() { term.Restore(int(in.Fd()), state) }
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-winch:
				pty.InheritSize(in, master)
			case <-c.stop:
				signal.Stop(winch)
				return
			}
		}
	}()
	go io.Copy(master, in) // ends with the process; the user's stdin may never close
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		io.Copy(out, master) // EIO once every holder of the slave is gone
	}()
	return nil
}

// relay returns f itself when it is not a terminal, else a pipe end whose
// other side is copied to or from f.
func (c *Console) relay(f *os.File, input bool) (*os.File, error) {
	if !term.IsTerminal(int(f.Fd())) {
		return f, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if input {
		c.closers = append(c.closers, r)
		go func() { io.Copy(w, f); w.Close() }()
		return r, nil
	}
	c.closers = append(c.closers, w)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		io.Copy(f, r)
		r.Close()
	}()
	return w, nil
}

// Started is called once the sandbox holds the command's stdio: the
// console's copies of the sandbox-side descriptors are closed, so that the
// relay sees end-of-file when the command is gone.
func (c *Console) Started() {
	if c.started {
		return
	}
	c.started = true
	if c.TTY {
		c.Stdin.Close()
		return
	}
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
		close(c.stop)
		for _, cl := range c.closers {
			cl.Close()
		}
		c.restore()
	})
}
