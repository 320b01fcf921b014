package denial

import (
	"io"

	"github.com/stockade-dev/stockade/internal/audit"
)

// Report is what an audit log says was refused.
type Report struct {
	Denials []Denial // newest last
	// Suppressed counts denials the log counted but did not write one by
	// one (the same host and port, over and over: audit's throttle).
	Suppressed int
}

// Read collects the denials of an audit log. A line that cannot be read is
// skipped: stockade logs --verify says why.
func Read(r io.Reader) Report {
	var rep Report
	for e, err := range audit.ReadEvents(r) {
		if err != nil {
			continue
		}
		if d, ok := FromEvent(e.Time, e.Event, e.Fields); ok {
			rep.Denials = append(rep.Denials, d)
			continue
		}
		if e.Event == audit.EventSuppressed {
			if ev, _ := e.Fields["of"].(string); IsDenial(ev) {
				rep.Suppressed += fields(e.Fields).num("count")
			}
		}
	}
	return rep
}
