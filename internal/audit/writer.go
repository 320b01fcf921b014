package audit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

var (
	// ErrLocked is returned by Open when another writer holds the log.
	ErrLocked = errors.New("the audit log is open for writing by another process (is its supervisor still running?)")
	// ErrClosed is returned by Log after Close.
	ErrClosed = errors.New("audit log is closed")
	// ErrNotSupported is returned by Open on systems without flock.
	ErrNotSupported = errors.New("audit log writing is not supported on this system")
)

// Writer appends events to one log. It is safe for concurrent use; events
// get consecutive seqs in the order Log is called.
type Writer struct {
	path    string
	session string
	now     func() time.Time // replaced in tests

	mu   sync.Mutex
	log  *os.File // O_APPEND, flocked while open
	head *os.File // overwritten in place at offset 0
	seq  uint64
	last string
	err  error // sticky: after a failed write the chain cannot go on
}

// Open opens the log at path for appending, creating it (mode 0600) if
// needed, and takes an exclusive flock on it: a second writer, in this
// process or another, gets ErrLocked. session must be a session ID
// ([A-Za-z0-9_-]{1,64}).
//
// On an existing log, Open verifies the whole log against its head and
// continues the chain from the last line. It refuses to append to a log that
// does not verify, that belongs to another session, or that has lines but no
// head: appending would bless a damaged history.
func Open(path, session string) (*Writer, error) {
	if !isSessionID(session) {
		return nil, fmt.Errorf("opening audit log %s: session ID %q is not of the form [A-Za-z0-9_-]{1,64}", path, session)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening audit log %s for writing: %w", path, err)
	}
	w, err := resume(f, path, session)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// resume checks the locked log f and opens its head for writing.
func resume(f *os.File, path, session string) (*Writer, error) {
	rep, err := verifyWithHead(f, HeadPath(path))
	if err != nil {
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("opening audit log %s: refusing to append: %w", path, err)
	}
	if rep.Lines > 0 && rep.Session != session {
		return nil, fmt.Errorf("opening audit log %s: it is the log of session %s, not %s", path, rep.Session, session)
	}
	h := Head{Session: session, Seq: rep.LastSeq, Hash: rep.LastHash}
	if err := writeHeadFile(HeadPath(path), h); err != nil {
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	hf, err := os.OpenFile(HeadPath(path), os.O_WRONLY|oNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("opening audit head: %w", err)
	}
	return &Writer{path: path, session: session, now: time.Now, log: f, head: hf, seq: h.Seq, last: h.Hash}, nil
}

// Log appends one event. fields must not use a reserved key (v, seq, time,
// session, source, event, prev, hash, in any case), keys must be of the form
// [a-z][a-z0-9_]{0,63}, and values must encode as JSON; otherwise Log returns an
// error and writes nothing. Security events (IsSecurity) are fsync'd, log and
// head, before Log returns.
func (w *Writer) Log(source, event string, fields map[string]any) error {
	if !isName(source) || !isName(event) {
		return fmt.Errorf("logging event %q from %q: source and event must be of the form [a-z][a-z0-9_]{0,63}", event, source)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("logging event %q: %w", event, err)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	size := 0
	for i, k := range keys {
		b, err := encodeValue(fields[k])
		if err != nil {
			return fmt.Errorf("logging event %q: encoding field %q: %w", event, k, err)
		}
		vals[i] = b
		size += len(k) + len(b) + len(`,"":`)
	}
	if size > MaxLineSize-512 {
		return fmt.Errorf("logging event %q: fields take %d bytes, more than a line may hold (%d)", event, size, MaxLineSize)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("logging event %q: %w", event, w.err)
	}
	line, hash := encodeLine(w.seq+1, w.now(), w.session, source, event, keys, vals, w.last)
	if err := w.append(line, hash, IsSecurity(event)); err != nil {
		w.err = err
		return fmt.Errorf("logging event %q: %w", event, err)
	}
	return nil
}

// append writes line and the new head; w.mu is held.
func (w *Writer) append(line []byte, hash string, security bool) error {
	// One write(2) on an O_APPEND file: readers see whole lines (or,
	// at worst, a line still growing, which Follow waits out).
	if _, err := w.log.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	if security {
		if err := w.log.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", w.path, err)
		}
	}
	w.seq++
	w.last = hash
	// The log is written before the head, so a crash in between leaves a
	// head one line behind, which Verify accepts; the reverse order would
	// leave a head pointing past the end, indistinguishable from a cut tail.
	h := Head{Session: w.session, Seq: w.seq, Hash: w.last}
	if _, err := w.head.WriteAt(h.encode(), 0); err != nil {
		return fmt.Errorf("writing %s: %w", HeadPath(w.path), err)
	}
	if security {
		if err := w.head.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", HeadPath(w.path), err)
		}
	}
	return nil
}

// Head returns the seq and hash of the last line written. Kept somewhere the
// log's writer cannot reach (printed at stop, sent off the machine), it
// anchors the log even against someone who rewrites both log and head file.
func (w *Writer) Head() Head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Head{Session: w.session, Seq: w.seq, Hash: w.last}
}

// Close syncs and closes the log and its head, releasing the lock.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return ErrClosed
	}
	err := errors.Join(w.log.Sync(), w.head.Sync(), w.head.Close(), w.log.Close())
	w.log, w.head = nil, nil
	if w.err == nil {
		w.err = ErrClosed
	}
	if err != nil {
		return fmt.Errorf("closing audit log %s: %w", w.path, err)
	}
	return nil
}
