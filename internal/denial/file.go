package denial

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
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

// File is the denials file of one run, on the host. It is made before the
// sandbox starts (the sandbox binds it read-only at Path) and written in
// place, never replaced: a rename would leave the sandbox's bind on the
// old file. It is empty until the first denial. Safe for concurrent use.
type File struct {
	path string
	mu   sync.Mutex
	f    *os.File
	// lines are the denials in the file, newest last, with newlines.
	lines []string
	size  int64
	stale bool // a write failed: the next one rewrites the whole file
	// last is the newest line without its time, and when it came: the
	// same denial again within repeatWithin is not written again (a
	// resolver asks for A and AAAA, a client retries at once).
	last     string
	lastTime time.Time
}

// repeatWithin is how soon the same denial counts as a repeat.
const repeatWithin = 2 * time.Second

// Create makes the file at path, which must not exist (a name planted
// there, a symlink included, fails it).
func Create(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("making the denials file: %w", err)
	}
	return &File{path: path, f: f}, nil
}

// Path is the file's host path.
func (f *File) Path() string { return f.path }

// Add writes d as the file's newest line. A write that fails (a full
// disk) is not retried, but the next Add rewrites the whole file; the
// audit log, not this file, is the record.
func (f *File) Add(d Denial) error {
	line := d.Line() + "\n"
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return os.ErrClosed
	}
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

// Close closes the file and removes it: the run is over, and why reads
// the audit log.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	os.Remove(f.path)
	return err
}
