package job

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stockade-dev/stockade/internal/review"
)

// reviewAt takes a snapshot of the files in the workdir that the user will
// soon run (CI workflows, a virtualenv's startup files, node_modules/.bin)
// and returns what reports their changes: one "stockade: REVIEW:" line each.
// Call the result only once the sandbox is gone, so that nothing inside can
// change them after the report. The lines are printed at every log level,
// like a loosening: they name code that runs outside the sandbox.
//
// It also watches the protected glob patterns (lefthook.*, *.code-workspace):
// a name that matches one exists and is protected, or does not and gets no
// placeholder, so one the command created is only found here.
func reviewAt(j Job, h Hooks) func() {
	warn := h.Warn
	if warn == nil {
		warn = func(string, ...any) {}
	}
	globs := protectedGlobs(j.Policy.Protect)
	planted, err := review.Before(j.Policy.Workdir, globs)
	if err != nil {
		warn("protected names created by the command are not looked for at exit: %v", err)
	}
	snap, err := review.Before(j.Policy.Workdir, review.Watched)
	if err != nil {
		warn("the files you run soon (CI workflows, .venv, node_modules/.bin) are not reviewed at exit: %v", err)
	}
	return func() {
		if planted != nil {
			changes, err := planted.After()
			if err != nil {
				warn("looking for protected names the command created: %v", err)
			}
			for _, c := range changes {
				if c.Kind == review.Created {
					warn("the command created %s, which stockade protects when it exists: review it before an IDE, git or an agent outside the sandbox uses it", filepath.Join(j.Policy.Workdir, c.Path))
				}
			}
		}
		if snap == nil {
			return
		}
		changes, err := snap.After()
		if err != nil {
			warn("reviewing the files you run soon: %v", err)
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

// protectedGlobs are the relative glob patterns of protect, as watches.
func protectedGlobs(protect []string) []review.Watch {
	var out []review.Watch
	for _, p := range protect {
		if !filepath.IsAbs(p) && strings.ContainsAny(p, "*?[") {
			out = append(out, review.Watch{Pattern: strings.TrimSuffix(p, "/"), Why: "protected when it exists"})
		}
	}
	return out
}
