package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// pollInterval is how often Follow looks at the file when it has no
// inotify watch, and how often it looks anyway when it has one (a watch
// does not survive everything, e.g. the file being replaced).
var (
	pollInterval       = 250 * time.Millisecond
	pollIntervalNotify = 2 * time.Second
)

// watchFile is watch, replaced in tests to exercise polling.
var watchFile = watch

// followReady, when set by a test, is called once Follow watches the file
// and has found its starting offset.
var followReady func()

// Follow calls fn for each event of the log at path, in order, then waits
// for new ones, as `logs --follow` does, until ctx is done (Follow then
// returns nil) or fn returns an error (Follow returns it). With fromStart
// false it starts at the current end. A line that cannot be parsed ends
// Follow with an error naming its byte offset. Follow takes no lock: it
// reads only whole lines, and waits for a line still being written.
func Follow(ctx context.Context, path string, fromStart bool, fn func(Event) error) error {
	// Watch before the first read, so no write between the two is missed.
	changed, stop := watchFile(path)
	defer stop()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("following audit log: %w", err)
	}
	defer f.Close()
	t := &tail{f: f}
	if !fromStart {
		if err := t.seekEnd(); err != nil {
			return fmt.Errorf("following audit log %s: %w", path, err)
		}
	}
	if followReady != nil {
		followReady()
	}
	interval := pollInterval
	if changed != nil {
		interval = pollIntervalNotify
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := t.drain(fn); err != nil {
			return fmt.Errorf("following audit log %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-ticker.C:
		}
	}
}

// tail reads whole lines from the end of a growing file.
type tail struct {
	f       *os.File
	off     int64  // offset of pending[0]
	pending []byte // bytes read past the last newline
	skip    bool   // drop everything up to the next newline
	buf     [64 << 10]byte
}

// seekEnd starts at the end of the file. If the end is inside a line, the
// writer is still writing it: that line is skipped once it is complete.
func (t *tail) seekEnd() error {
	end, err := t.f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	t.off = end
	if end == 0 {
		return nil
	}
	var last [1]byte
	if _, err := t.f.ReadAt(last[:], end-1); err != nil {
		return err
	}
	t.skip = last[0] != '\n'
	return nil
}

// drain reads what has been appended and calls fn for each complete line.
func (t *tail) drain(fn func(Event) error) error {
	for {
		n, err := t.f.Read(t.buf[:])
		t.pending = append(t.pending, t.buf[:n]...)
		if perr := t.lines(fn); perr != nil {
			return perr
		}
		if errors.Is(err, io.EOF) || n == 0 && err == nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (t *tail) lines(fn func(Event) error) error {
	for {
		i := bytes.IndexByte(t.pending, '\n')
		if i < 0 {
			if len(t.pending) > MaxLineSize {
				return fmt.Errorf("at offset %d: %w", t.off, errLineTooLong)
			}
			return nil
		}
		line := bytes.Clone(t.pending[:i])
		t.pending = t.pending[i+1:]
		off := t.off
		t.off += int64(i + 1)
		if t.skip {
			t.skip = false
			continue
		}
		ev, err := parseLine(line)
		if err != nil {
			return fmt.Errorf("at offset %d: not an audit line: %w", off, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
