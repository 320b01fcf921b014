// Package progress shows which step of a start stockade is in, on one
// line of the user's terminal rewritten in place, so that a first run
// that takes seconds (an agent's sandbox HOME made, the container engine
// started) does not look hung. The line counts the seconds of a step that
// takes more than one, and is erased when the start is done, before the
// run's own output: nothing of it stays on the screen or in a log. When
// stderr is not a terminal (a script, CI, a file), nothing is written at
// all.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Line is the progress line of one start. A nil Line shows nothing; its
// methods may be called all the same.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	width int // the terminal's columns, 0 when unknown
	step  string
	began time.Time
	secs  int // the seconds the line shows
	tick  *time.Ticker
	done  chan struct{}
}

// New returns the progress line on f, or nil when f is not a terminal or
// quiet is set (--log-level error).
func New(f *os.File, quiet bool) *Line {
	if quiet || f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	w, _, _ := term.GetSize(int(f.Fd()))
	return &Line{w: f, width: w}
}

// Step shows what, the step that begins now ("preparing claude's sandbox
// HOME"), in place of the step before.
func (l *Line) Step(what string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.step, l.began = what, time.Now()
	l.draw()
	if l.tick == nil {
		l.tick, l.done = time.NewTicker(time.Second), make(chan struct{})
		go l.count(l.tick, l.done)
	} else {
		// Tick on this step's whole seconds, not the first step's: a
		// tick that lands on a second's edge would skip a count.
		l.tick.Reset(time.Second)
	}
}

// Done erases the line: the start is over, or failed and says so next.
func (l *Line) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tick != nil {
		l.tick.Stop()
		close(l.done)
		l.tick = nil
	}
	if l.step != "" {
		io.WriteString(l.w, "\r\x1b[K")
		l.step = ""
	}
}

// count redraws the line when the step's seconds change.
func (l *Line) count(tick *time.Ticker, done chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			l.mu.Lock()
			if l.step != "" && l.age() != l.secs {
				l.draw()
			}
			l.mu.Unlock()
		}
	}
}

// age is the step's whole seconds, rounded: the ticks come at the step's
// whole seconds, a little late, and a late tick must not show the count
// before.
func (l *Line) age() int {
	return int((time.Since(l.began) + 500*time.Millisecond) / time.Second)
}

// draw writes the line: back to its start, erased, the step, and after a
// second its age. It is cut to the terminal's width, since a line that
// wraps cannot be erased from its end.
func (l *Line) draw() {
	text := "stockade: " + l.step + "…"
	l.secs = l.age()
	if l.secs >= 1 {
		text += fmt.Sprintf(" %ds", l.secs)
	}
	if l.width > 1 {
		r := []rune(text)
		if len(r) > l.width-1 {
			text = string(r[:l.width-1])
		}
	}
	io.WriteString(l.w, "\r\x1b[K"+text)
}
