package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

// logger writes stockade's own messages to stderr, one line each, prefixed
// "stockade:". Loosenings are printed at every level: never weaken silently.
type logger struct {
	level int
	out   io.Writer // os.Stderr when nil
}

var levels = map[string]int{"debug": 0, "info": 1, "warn": 2, "error": 3}

func newLogger(level string) logger {
	l, ok := levels[level]
	if !ok {
		l = levels["warn"]
	}
	return logger{level: l}
}

// Every message is written out with termfilter.Visible: many name what
// the sandboxed command chose (a file's path, a host it asked for).
func (l logger) printf(min int, prefix, format string, args ...any) {
	if l.level <= min {
		fmt.Fprintf(l.writer(), "stockade: %s%s\n", prefix, termfilter.Visible(fmt.Sprintf(format, args...)))
	}
}

func (l logger) debugJSON(what string, v any) {
	if l.level <= 0 {
		b, _ := json.Marshal(v)
		l.printf(0, "debug: ", "%s: %s", what, b)
	}
}

// status is the start line naming the active layers: shown unless --log-level error.
func (l logger) status(format string, args ...any) { l.printf(2, "", format, args...) }
func (l logger) warn(format string, args ...any)   { l.printf(2, "warning: ", format, args...) }
func (l logger) info(format string, args ...any)   { l.printf(1, "", format, args...) }
func (l logger) error(format string, args ...any)  { l.printf(3, "", format, args...) }
func (l logger) loosening(format string, args ...any) {
	fmt.Fprintf(l.writer(), "stockade: LOOSENED: %s\n", termfilter.Visible(fmt.Sprintf(format, args...)))
}

// finding prints what a check at the end of the run found, whatever the
// log level: it is about the user's files.
func (l logger) finding(f job.Finding) {
	fmt.Fprintf(l.writer(), "stockade: %s\n", termfilter.Visible(f.String()))
}

func (l logger) writer() io.Writer {
	if l.out == nil {
		return os.Stderr
	}
	return l.out
}
