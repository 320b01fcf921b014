package job

import (
	"fmt"
	"io"
	"os"

	"github.com/stockade-dev/stockade/internal/review"
)

// reviewAt takes a snapshot of the files in the workdir that the user will
// soon run (CI workflows, a virtualenv's startup files, node_modules/.bin)
// and returns what reports their changes: one "stockade: REVIEW:" line each.
// Call the result only once the sandbox is gone, so that nothing inside can
// change them after the report. The lines are printed at every log level,
// like a loosening: they name code that runs outside the sandbox.
func reviewAt(j Job, h Hooks) func() {
	snap, err := review.Before(j.Policy.Workdir, review.Watched)
	if err != nil {
		if h.Warn != nil {
			h.Warn("the files you run soon (CI workflows, .venv, node_modules/.bin) are not reviewed at exit: %v", err)
		}
		return func() {}
	}
	return func() {
		changes, err := snap.After()
		if err != nil {
			if h.Warn != nil {
				h.Warn("reviewing the files you run soon: %v", err)
			}
			return
		}
		report := h.Review
		if report == nil {
			var w io.Writer = os.Stderr
			if h.Stderr != nil {
				w = h.Stderr
			}
			report = func(line string) { fmt.Fprintf(w, "stockade: REVIEW: %s\n", line) }
		}
		for _, line := range review.Lines(changes) {
			report(line)
		}
	}
}
