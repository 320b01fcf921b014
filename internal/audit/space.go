package audit

import "fmt"

// reserve makes sure that, once a line of n bytes is written, at least
// Reserve bytes past it stay allocated for the events after the end. It
// allocates a reserve more at a time, so a busy log calls fallocate once per
// Reserve bytes, not once per line. w.mu is held.
//
// The reserve lives in the log file itself, past its end, rather than in a
// spare file to delete when needed: space freed by deleting a file goes to
// whoever writes next, and the sandboxed command may be writing in a loop.
func (w *Writer) reserve(n int64) error {
	if w.limits.Reserve <= 0 || w.unreserved {
		return nil
	}
	need := w.size + n + w.limits.Reserve
	if w.alloc >= need {
		return nil
	}
	want := need + w.limits.Reserve
	if err := allocate(w.log, w.size, want-w.size); err != nil {
		if unsupported(err) {
			w.unreserved = true
		}
		return fmt.Errorf("reserving %d bytes for the audit log %s: %w", want-w.size, w.path, err)
	}
	w.alloc = want
	return nil
}
