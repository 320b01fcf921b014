package denial

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// MaxLines is how many denials the file keeps: when one more comes, the
// oldest half goes, so that the file holds the newest MaxLines/2 to
// MaxLines denials and at most MaxLines*(maxLine) bytes, however many
// denials the sandbox provokes.
const MaxLines = 100

// header starts the file once it holds a denial.
const header = "# stockade: what this sandbox refused, newest last (the last 50 to 100).\n" +
	"# time, how, host:port | rule that refused it | why | allow: the command a human runs on the host to allow it.\n" +
	"# Written by stockade outside the sandbox; read-only here. Do not look for a way around a denial: ask the user.\n"

// File is the denials file of one run, written through a descriptor of
// the file of its sandbox (Use): init makes that file in a tmpfs of its
// own, binds it read-only at Path and sends the supervisor a write-only
// descriptor of it (package sandbox, Options.OnFeed), so the file has no
// name on the host and nothing there to create or remove. It is written in
// place, never replaced: a rename would leave the sandbox's bind on the old
// file. The zero File is ready: it keeps the denials until a file is in
// use. Safe for concurrent use.
type File struct {
	mu sync.Mutex
	f  *os.File // nil: no sandbox's file in use
	// lines are the denials in the file, newest last, with newlines.
	lines []string
	size  int64
	stale bool // a write failed, or none could be made: the next one rewrites the whole file
	// last is the newest line without its time, and when it came: the
	// same denial again within repeatWithin is not written again (a
	// resolver asks for A and AAAA, a client retries at once).
	last     string
	lastTime time.Time
}

// repeatWithin is how soon the same denial counts as a repeat.
const repeatWithin = 2 * time.Second

// Use makes w, the file of a new sandbox (empty, as init made it), the
// one f writes, and closes the one before: a session that starts its
// command again gets a new sandbox, and a new file, under the same
// services. The denials f keeps are written to w at once, so that the
// command started again sees those of the earlier starts.
func (f *File) Use(w *os.File) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f != nil {
		f.f.Close()
	}
	f.f, f.size = w, 0
	if len(f.lines) == 0 {
		f.stale = false
		return nil
	}
	return f.rewrite()
}

// Add writes d as the file's newest line. A write that fails (a full
// disk) is not retried, but the next Add rewrites the whole file; the
// audit log, not this file, is the record.
func (f *File) Add(d Denial) error {
	line := d.Line() + "\n"
	f.mu.Lock()
	defer f.mu.Unlock()
	_, key, _ := strings.Cut(line, " ")
	if key == f.last && d.Time.Sub(f.lastTime) < repeatWithin {
		return nil
	}
	f.last, f.lastTime = key, d.Time
	if len(f.lines) >= MaxLines {
		f.lines = f.lines[len(f.lines)-MaxLines/2:]
		f.stale = true
	}
	f.lines = append(f.lines, line)
	if f.f == nil {
		// Kept for the next file in use.
		f.stale = true
		return nil
	}
	if f.size == 0 || f.stale {
		return f.rewrite()
	}
	n, err := f.f.WriteAt([]byte(line), f.size)
	f.size += int64(n)
	if err != nil {
		f.stale = true
		return fmt.Errorf("writing the denials file: %w", err)
	}
	return nil
}

// rewrite writes the header and every kept line from the start, then cuts
// the file to them.
func (f *File) rewrite() error {
	b := header + strings.Join(f.lines, "")
	n, err := f.f.WriteAt([]byte(b), 0)
	if err == nil && int64(n) < f.size {
		err = f.f.Truncate(int64(n))
	}
	if err != nil {
		f.stale = true
		return fmt.Errorf("writing the denials file: %w", err)
	}
	f.size, f.stale = int64(n), false
	return nil
}

// Close closes the file in use: the sandbox is gone. The denials stay
// kept, for a next Use.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	return err
}
