package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
)

// ReadEvents yields the events of a log in file order. A line that cannot
// be parsed yields an error naming its line number, and reading goes on; an
// error reading r ends the sequence. ReadEvents does not check hashes:
// Verify does.
func ReadEvents(r io.Reader) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		lr := newLineReader(r)
		for n := 1; ; n++ {
			line, err := lr.next()
			if err == io.EOF {
				return
			}
			if err != nil && !errors.Is(err, errLineTooLong) && !errors.Is(err, errNoNewline) {
				yield(Event{}, fmt.Errorf("reading audit log: %w", err))
				return
			}
			if err == nil {
				var ev Event
				if ev, err = parseLine(bytes.Clone(line)); err == nil {
					if !yield(ev, nil) {
						return
					}
					continue
				}
			}
			if !yield(Event{}, fmt.Errorf("line %d: %w", n, err)) {
				return
			}
		}
	}
}
