package session

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/proc"
)

// Record is what a foreground `stockade run` leaves behind as a session
// does: an entry that `stockade list --all` shows (state running while it
// runs, then how it ended) and an audit log. It is made off the start's
// critical path: Begin only queues, and once the command runs (Open) a
// goroutine of its own creates the entry, opens the log and writes the
// events in the order they came, while stockade mostly waits for the
// command. Event never waits for the disk; Finish waits for every event
// to be written, so that none is lost because the run ended.
type Record struct {
	cfg  Config
	sess Session

	startOnce sync.Once
	start     chan struct{} // closed by Started: the start event may go
	openOnce  sync.Once
	done      chan struct{} // closed when the log is closed

	mu     sync.Mutex
	queue  []queued
	wake   chan struct{}
	closed bool // Finish was called: the queue ends with the stop event
	end    func(*Session)
	failed sync.Once
}

type queued struct {
	source, event string
	fields        map[string]any
}

// Begin starts recording the run of cfg (cfg.ID, cfg.Store) as sess.
func Begin(cfg Config, sess Session) *Record {
	cfg.Foreground = true
	return &Record{cfg: cfg, sess: sess, start: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Open starts writing the record; call it once the command has started,
// when the work does not slow the start down. Finish opens it too.
func (r *Record) Open() { r.openOnce.Do(func() { go r.write() }) }

// Started gives the start event what was known only once the run was
// planned: the enforcement line and the loosenings.
func (r *Record) Started(enforcement string, loosened []string) {
	r.startOnce.Do(func() {
		r.cfg.Enforcement, r.cfg.Loosened = enforcement, loosened
		close(r.start)
	})
}

// Event queues an event for the log; it never waits.
func (r *Record) Event(source, event string, fields map[string]any) {
	r.mu.Lock()
	if !r.closed {
		r.queue = append(r.queue, queued{source, event, fields})
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Report is the run's reporter.
func (r *Record) Report() Reporter { return Reporter{Event: r.Event} }

// Finish records the end of the run (its status, and reason: "exited" or
// "failed: …"), and returns once every event is written and the log
// closed.
func (r *Record) Finish(code int, reason string) {
	r.Started(r.cfg.Enforcement, r.cfg.Loosened) // a run that failed before it was planned
	r.Open()
	state := Exited
	if reason != "exited" {
		state = Failed
	}
	r.Event(audit.SourceSupervisor, audit.EventStop, map[string]any{"reason": reason, "status": code, "state": string(state)})
	now := time.Now().UTC()
	r.mu.Lock()
	r.closed = true
	r.end = func(s *Session) {
		s.State, s.Ended, s.ExitCode, s.Reason = state, &now, &code, reason
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	<-r.done
}

// write creates the entry, opens the log, and writes the queue until
// Finish.
func (r *Record) write() {
	defer close(r.done)
	store, id := r.cfg.Store, r.cfg.ID
	sess := r.sess
	sess.V, sess.ID, sess.State, sess.Started, sess.Foreground = 1, id, Running, time.Now().UTC(), true
	sess.PID = os.Getpid()
	sess.PIDStart = proc.StartTime(sess.PID)
	var w *audit.Writer
	err := store.Create(sess)
	created := err == nil
	if created {
		// Neither an fsync nor a reserve: the end of the run waits
		// for neither (audit.Limits).
		w, err = audit.OpenLimited(store.Audit(id), id, audit.Limits{NoSync: true, Reserve: -1})
	}
	if err != nil {
		r.fail(err)
	}
	<-r.start
	r.log(w, audit.SourceSupervisor, audit.EventStart, startFields(r.cfg))
	for {
		r.mu.Lock()
		q, closed := r.queue, r.closed
		r.queue = nil
		r.mu.Unlock()
		for _, e := range q {
			r.log(w, e.source, e.event, e.fields)
		}
		if closed && len(q) == 0 {
			break
		}
		if !closed {
			<-r.wake
		}
	}
	if w != nil {
		if err := w.Close(); err != nil {
			r.fail(err)
		}
	}
	if created {
		// Nothing else writes a foreground run's entry while it runs
		// (stop and attach refuse it): no lock, no read back.
		r.mu.Lock()
		r.end(&sess)
		r.mu.Unlock()
		if err := store.rewrite(sess); err != nil {
			r.fail(err)
		}
	}
}

func (r *Record) log(w *audit.Writer, source, event string, fields map[string]any) {
	if w == nil {
		return
	}
	if err := w.Log(source, event, fields); err != nil {
		r.fail(err)
	}
}

// fail tells the user, once, that the run is not (fully) recorded; the run
// goes on: the foreground user sees its events on the terminal.
func (r *Record) fail(err error) {
	r.failed.Do(func() {
		fmt.Fprintf(os.Stderr, "stockade: warning: the audit log of run %s: %v\n", r.cfg.ID, err)
	})
}
