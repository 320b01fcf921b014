package audit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// flushEvery is how often the background flusher writes the counts of
// throttled events that are due and syncs what is not on disk yet: the
// bound on how long an event that Log does not sync (a connection) stays in
// the page cache only.
const flushEvery = time.Second

// syncer is a group commit: a Log that must wait for its line to reach the
// disk either starts an fsync round, which covers every line written before
// it started, or waits for the round under way and, if that one started
// before its line was written, for the next. Under a flood, many lines
// share one round instead of paying two fsyncs each.
type syncer struct {
	w      *Writer
	mu     sync.Mutex
	cond   *sync.Cond
	last   uint64 // highest seq written (log and head)
	synced uint64 // highest seq on disk
	active bool   // a round is under way, without mu
	shut   bool
	err    error // a round failed: what it covered may not be on disk
	rounds atomic.Int64
	hook   func() // run at the start of each round; tests hold a round with it
}

func (s *syncer) init(w *Writer) {
	s.w = w
	s.cond = sync.NewCond(&s.mu)
}

// written records that lines up to seq are written; w.mu is held.
func (s *syncer) written(seq uint64) {
	s.mu.Lock()
	s.last = seq
	s.mu.Unlock()
}

// wait returns once the line with seq is on disk, log and head.
func (s *syncer) wait(seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < seq {
		switch {
		case s.err != nil:
			return s.err
		case s.shut:
			return ErrClosed
		case s.active:
			s.cond.Wait()
			continue
		}
		s.active = true
		target := s.last
		s.mu.Unlock()
		err := s.round()
		s.mu.Lock()
		s.active = false
		if err != nil {
			s.err = err
		} else {
			s.synced = max(s.synced, target)
		}
		s.cond.Broadcast()
	}
	return nil
}

// round syncs the log, then the head. The files stay open until close,
// which waits for a round under way.
func (s *syncer) round() error {
	s.rounds.Add(1)
	if s.hook != nil {
		s.hook()
	}
	if err := s.w.log.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", s.w.path, err)
	}
	if err := s.w.head.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", HeadPath(s.w.path), err)
	}
	return nil
}

// close waits for a round under way and, with final, syncs what is left;
// w.mu is held, so nothing more is written.
func (s *syncer) close(final bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.active {
		s.cond.Wait()
	}
	s.shut = true
	defer s.cond.Broadcast()
	if !final {
		return nil
	}
	err := s.round()
	if err == nil {
		s.synced = s.last
	}
	return err
}

// startFlusher runs the flusher until Close.
func (w *Writer) startFlusher() {
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			w.mu.Lock()
			if w.st != closed && w.err == nil {
				w.flushDue(w.now(), false)
			}
			seq := w.seq
			w.mu.Unlock()
			w.sync.wait(seq) // an error is the next Log's to report
		}
	}()
}

// flushDue writes a suppressed event for each throttled kind whose period
// is over (all that held any, with force); w.mu is held.
func (w *Writer) flushDue(now time.Time, force bool) {
	if w.err != nil || w.st == closed {
		return
	}
	for _, s := range w.throttle.due(now, force) {
		k, v, err := encodeFields(EventSuppressed, s.fields())
		if err != nil {
			panic(err) // the fields are ours: a bug, not an input
		}
		w.writeOne(s.source, EventSuppressed, k, v)
	}
}
