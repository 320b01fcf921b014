package audit

import (
	"errors"
	"fmt"
	"io"
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
	// ErrEnded is returned by Log for an event the log had no room for after
	// it ended (see Writer.Ended): the event is counted, not written.
	ErrEnded = errors.New("the audit log has ended")
)

// Defaults of the Limits fields left zero.
const (
	// DefaultMaxBytes is where a log ends: at a denial rate that the
	// throttle lets through and an allowed connection every second, it
	// takes days to reach; a flood cannot fill the state directory.
	DefaultMaxBytes = 64 << 20
	// DefaultReserve is the space kept allocated past the end of the log,
	// and the room the final events have once it has ended.
	DefaultReserve = 256 << 10
)

// finalRoom is the part of the reserve kept for the final events (kinds
// with final set) and the count of what was dropped.
const finalRoom = 8 << 10

// Limits bounds a log's size and keeps room for its last events.
type Limits struct {
	// MaxBytes ends the log (event log_end, reason "log cap reached") when
	// the next event would take it past MaxBytes bytes. 0 means
	// DefaultMaxBytes.
	MaxBytes int64
	// Reserve bytes are kept allocated past the end of the log (fallocate
	// with FALLOC_FL_KEEP_SIZE), so that a full disk ends the log with room
	// left for the end event and the session's final events. 0 means
	// DefaultReserve; a negative value reserves nothing.
	Reserve int64
	// NoSync: Log returns once a security event is written, without
	// waiting for it to reach the disk, and Close does not sync; the
	// flusher still syncs the log in the background. The foreground
	// `stockade run` logs so, because its start and end must not wait on
	// the disk: every event is written (write(2)) before the process
	// exits, so the end of the run loses none; a crash of the machine may
	// lose the last ones.
	NoSync bool
}

// state is where a writer is in its life, in the order they happen.
type state int

const (
	open   state = iota // every event is written
	ended               // log_end written: only what the reserve holds
	closed              // Close was called
)

// Writer appends events to one log. It is safe for concurrent use; events
// get consecutive seqs in the order Log is called.
type Writer struct {
	path    string
	session string
	now     func() time.Time // replaced in tests
	limits  Limits

	mu         sync.Mutex
	log        *os.File // O_APPEND, flocked while open
	head       *os.File // overwritten in place at offset 0
	seq        uint64
	last       string
	size       int64 // bytes of whole lines in the log
	alloc      int64 // the log's space is allocated up to here (>= size)
	unreserved bool  // the filesystem cannot preallocate: no reserve
	st         state
	endAt      int64  // size when the log ended
	why        string // why it ended
	dropped    int    // events not written after the end
	cut        int    // bytes of the last failed write, undone
	pending    []pendingEvent
	throttle   throttle
	endedC     chan struct{} // closed when the log ends
	err        error         // a write failed and could not be undone: nothing more is written

	sync     syncer
	stop     chan struct{} // ends the background flusher
	stopOnce sync.Once
	done     chan struct{}
}

// pendingEvent is an event the writer records on its own at the next
// opportunity: a recovered gap, a reserve that could not be made.
type pendingEvent struct {
	event  string
	fields map[string]any
}

// Open opens the log at path for appending with the default Limits; see
// OpenLimited.
func Open(path, session string) (*Writer, error) {
	return OpenLimited(path, session, Limits{})
}

// OpenLimited opens the log at path for appending, creating it (mode 0600)
// if needed, and takes an exclusive flock on it: a second writer, in this
// process or another, gets ErrLocked. session must be a session ID
// ([A-Za-z0-9_-]{1,64}).
//
// On an existing log, Open verifies the whole log against its head and
// continues the chain from the last line. It refuses to append to a log that
// does not verify, that belongs to another session, or that has lines but no
// head: appending would bless a damaged history. The one damage it repairs
// is a cut-off last line (a writer that died or ran out of space in the
// middle of a write): it cuts the log back to the last newline and records
// a gap event in its place.
func OpenLimited(path, session string, limits Limits) (*Writer, error) {
	if !isSessionID(session) {
		return nil, fmt.Errorf("opening audit log %s: session ID %q is not of the form [A-Za-z0-9_-]{1,64}", path, session)
	}
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultMaxBytes
	}
	if limits.Reserve == 0 {
		limits.Reserve = DefaultReserve
	}
	limits.Reserve = max(limits.Reserve, 0)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening audit log %s for writing: %w", path, err)
	}
	w, err := resume(f, path, session, !limits.NoSync)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.limits = limits
	w.alloc = w.size
	if err := w.reserve(0); err != nil {
		// Not fatal: the log works, but a full disk can end it without
		// room for the last events. The user reads why in the log.
		w.pending = append(w.pending, pendingEvent{EventWarning, map[string]any{
			"message": "audit log space not reserved: " + err.Error()}})
	}
	w.startFlusher()
	return w, nil
}

// resume checks the locked log f, repairs a cut-off last line, and opens
// its head for writing.
func resume(f *os.File, path, session string, sync bool) (*Writer, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	cut, err := partialTail(f, size)
	if err != nil {
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	// Everything before the cut-off line must verify: the repair is for
	// a log whose only damage is its unfinished last write.
	rep, err := verifyWithHead(io.NewSectionReader(f, 0, size-cut), HeadPath(path))
	if err != nil {
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("opening audit log %s: refusing to append: %w", path, err)
	}
	if rep.Lines > 0 && rep.Session != session {
		return nil, fmt.Errorf("opening audit log %s: it is the log of session %s, not %s", path, rep.Session, session)
	}
	if cut > 0 {
		if err := f.Truncate(size - cut); err != nil {
			return nil, fmt.Errorf("opening audit log %s: cutting off its unfinished last line: %w", path, err)
		}
		size -= cut
	}
	h := Head{Session: session, Seq: rep.LastSeq, Hash: rep.LastHash}
	if err := writeHeadFile(HeadPath(path), h, sync); err != nil {
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	hf, err := os.OpenFile(HeadPath(path), os.O_WRONLY|oNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("opening audit head: %w", err)
	}
	w := &Writer{path: path, session: session, now: time.Now, log: f, head: hf, seq: h.Seq, last: h.Hash, size: size,
		endedC: make(chan struct{}), throttle: newThrottle()}
	w.sync.init(w)
	if cut > 0 {
		w.pending = append(w.pending, gapEvent(cut, "an unfinished last line, found when the log was reopened"))
	}
	return w, nil
}

// Log appends one event. fields must not use a reserved key (v, seq, time,
// session, source, event, prev, hash, in any case), keys must be of the form
// [a-z][a-z0-9_]{0,63}, and values must encode as JSON; otherwise Log returns an
// error and writes nothing. Security events (IsSecurity) are on disk, log
// and head, when Log returns.
//
// A throttled event (a denial, a failed connection) past its rate is
// counted instead, and the count is logged later (event suppressed). After
// the log has ended (Ended), Log writes what the reserve holds and returns
// ErrEnded for the rest.
func (w *Writer) Log(source, event string, fields map[string]any) error {
	if !isName(source) || !isName(event) {
		return fmt.Errorf("logging event %q from %q: source and event must be of the form [a-z][a-z0-9_]{0,63}", event, source)
	}
	keys, vals, err := encodeFields(event, fields)
	if err != nil {
		return err
	}
	w.mu.Lock()
	now := w.now()
	if k := throttleOf(event); k != nil {
		if sample, ok := k(fields); ok && !w.throttle.allow(source, event, sample, now) {
			w.flushDue(now, false)
			w.mu.Unlock()
			return nil
		}
	}
	w.flushDue(now, false)
	seq, err := w.write(source, event, keys, vals)
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("logging event %q: %w", event, err)
	}
	if IsSecurity(event) && !w.limits.NoSync {
		if err := w.sync.wait(seq); err != nil {
			return fmt.Errorf("logging event %q: %w", event, err)
		}
	}
	return nil
}

// encodeFields checks and encodes fields, keys sorted.
func encodeFields(event string, fields map[string]any) ([]string, [][]byte, error) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if err := checkKey(k); err != nil {
			return nil, nil, fmt.Errorf("logging event %q: %w", event, err)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	size := 0
	for i, k := range keys {
		b, err := encodeValue(fields[k])
		if err != nil {
			return nil, nil, fmt.Errorf("logging event %q: encoding field %q: %w", event, k, err)
		}
		vals[i] = b
		size += len(k) + len(b) + len(`,"":`)
	}
	if size > MaxLineSize-512 {
		return nil, nil, fmt.Errorf("logging event %q: fields take %d bytes, more than a line may hold (%d)", event, size, MaxLineSize)
	}
	return keys, vals, nil
}

// write writes the events the writer owes first, then this one, and
// returns its seq; w.mu is held.
func (w *Writer) write(source, event string, keys []string, vals [][]byte) (uint64, error) {
	switch {
	case w.st == closed:
		return 0, ErrClosed
	case w.err != nil:
		return 0, w.err
	}
	if err := w.drainPending(); err != nil {
		return 0, err
	}
	return w.writeOne(source, event, keys, vals)
}

// drainPending writes the events the writer owes; w.mu is held.
func (w *Writer) drainPending() error {
	for len(w.pending) > 0 {
		p := w.pending[0]
		w.pending = w.pending[1:]
		k, v, err := encodeFields(p.event, p.fields)
		if err != nil {
			panic(err) // the fields are ours: a bug, not an input
		}
		line, hash := encodeLine(w.seq+1, w.now(), w.session, SourceSupervisor, p.event, k, v, w.last)
		if w.st == ended && !w.fits(p.event, int64(len(line))) {
			w.dropped++
			continue
		}
		if err := w.append(line, hash); err != nil {
			if w.err == nil { // undone: owed until there is space
				w.pending = append([]pendingEvent{p}, w.pending...)
			}
			return err
		}
	}
	return nil
}

// writeOne encodes and appends one line within the limits, ending the log
// when the line does not fit; w.mu is held.
func (w *Writer) writeOne(source, event string, keys []string, vals [][]byte) (uint64, error) {
	line, hash := encodeLine(w.seq+1, w.now(), w.session, source, event, keys, vals, w.last)
	n := int64(len(line))
	if w.st == open {
		if w.size+n > w.limits.MaxBytes {
			w.end(fmt.Sprintf("log cap reached (%d bytes)", w.limits.MaxBytes))
		} else if err := w.reserve(n); err != nil {
			w.end("no space for the audit log: " + err.Error())
		}
		if w.st != open { // the end took this line's seq
			line, hash = encodeLine(w.seq+1, w.now(), w.session, source, event, keys, vals, w.last)
		}
	}
	if w.st == ended && !w.fits(event, n) {
		w.dropped++
		return 0, ErrEnded
	}
	if err := w.append(line, hash); err != nil {
		if w.err == nil {
			if w.cut > 0 {
				// A cut-off line, undone: its seq goes to a gap event.
				w.pending = append(w.pending, gapEvent(int64(w.cut), err.Error()))
			} else {
				w.dropped++
			}
			w.end(err.Error())
		}
		return 0, err
	}
	return w.seq, nil
}

// fits reports whether a line of n bytes fits in what is left of the
// reserve after the end; the last finalRoom bytes are for final events.
func (w *Writer) fits(event string, n int64) bool {
	room := w.endAt + max(w.limits.Reserve, finalRoom) - w.size
	if !isFinal(event) {
		room -= finalRoom
	}
	return n <= room
}

// end records why the log ends, in the log itself (event log_end, written
// from the reserve), and tells Ended's readers; w.mu is held.
func (w *Writer) end(why string) {
	if w.st != open {
		return
	}
	w.st, w.endAt, w.why = ended, w.size, why
	w.drainPending()
	w.flushDue(w.now(), true)
	f := map[string]any{"reason": why}
	k, v, _ := encodeFields(EventLogEnd, f)
	line, hash := encodeLine(w.seq+1, w.now(), w.session, SourceSupervisor, EventLogEnd, k, v, w.last)
	if err := w.append(line, hash); err != nil && w.err == nil {
		// Undone: no space even for this. Owed, with the gap, for when
		// there is some again (the command may delete its filler).
		w.pending = append(w.pending, pendingEvent{EventLogEnd, f})
	}
	close(w.endedC)
}

// append writes line and the new head; w.mu is held. A failed write is
// undone (the log cut back to its last whole line) and ends the log; one
// that cannot be undone stops the writer.
func (w *Writer) append(line []byte, hash string) error {
	// One write(2) on an O_APPEND file: readers see whole lines (or,
	// at worst, a line still growing, which Follow waits out).
	w.cut = 0
	if n, err := w.log.Write(line); err != nil {
		err = fmt.Errorf("writing %s: %w", w.path, err)
		if terr := w.log.Truncate(w.size); terr != nil {
			w.err = errors.Join(err, fmt.Errorf("cutting %s back to its last whole line: %w", w.path, terr))
			w.cut = 0
			if w.st == open {
				w.st, w.why = ended, err.Error()
				close(w.endedC)
			}
			return w.err
		}
		w.alloc = w.size // truncating frees the blocks past the end
		w.cut = n
		return err
	}
	w.seq++
	w.last = hash
	w.size += int64(len(line))
	// The log is written before the head, so a crash in between leaves a
	// head one line behind, which Verify accepts; the reverse order would
	// leave a head pointing past the end, indistinguishable from a cut tail.
	h := Head{Session: w.session, Seq: w.seq, Hash: w.last}
	if _, err := w.head.WriteAt(h.encode(), 0); err != nil {
		w.err = fmt.Errorf("writing %s: %w", HeadPath(w.path), err)
		return w.err
	}
	w.sync.written(w.seq)
	return nil
}

// Ended is closed when the log ends: its cap was reached, the disk is full
// or a write failed. From then on only what the reserve holds is written;
// the caller must stop whatever would need recording.
func (w *Writer) Ended() <-chan struct{} { return w.endedC }

// EndReason says why the log ended ("" while it has not).
func (w *Writer) EndReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

// Head returns the seq and hash of the last line written. Kept somewhere the
// log's writer cannot reach (printed at stop, sent off the machine), it
// anchors the log even against someone who rewrites both log and head file.
func (w *Writer) Head() Head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Head{Session: w.session, Seq: w.seq, Hash: w.last}
}

// Close writes what is owed (the counts of throttled events, of events
// dropped after the end), syncs and closes the log and its head, and
// releases the lock.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.st == closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.st == closed {
		return ErrClosed // a concurrent Close got here first
	}
	if w.err == nil {
		w.flushDue(w.now(), true)
		if w.dropped > 0 {
			k, v, _ := encodeFields(EventDropped, map[string]any{"count": w.dropped, "reason": w.why})
			w.writeOne(SourceSupervisor, EventDropped, k, v)
		}
	}
	w.st = closed
	err := w.sync.close(!w.limits.NoSync)
	// Give back the reserve: the log is done growing.
	if w.alloc > w.size {
		err = errors.Join(err, w.log.Truncate(w.size))
	}
	err = errors.Join(err, w.head.Close(), w.log.Close())
	if err != nil {
		return fmt.Errorf("closing audit log %s: %w", w.path, err)
	}
	return nil
}

// Stats counts what a writer did, for tests and measurements.
type Stats struct {
	Syncs int64 // fsync rounds (each syncs the log and the head)
	Bytes int64 // size of the log
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Stats{Syncs: w.sync.rounds.Load(), Bytes: w.size}
}
