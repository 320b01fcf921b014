package ocihook

import (
	"encoding/json"
	"net"
	"time"
)

// Report is what the createRuntime hook tells the session of a container it
// refused: one JSON line on the engine's events socket, for the session's
// audit log. The hook runs in the engine's namespaces; what it reports is
// the engine side's word, bounded in size by the reader.
type Report struct {
	Check     string `json:"check"`
	Field     string `json:"field"`
	Reason    string `json:"reason"`
	Container string `json:"container,omitempty"`
	Image     string `json:"image,omitempty"`
}

// MaxReport bounds one report line, its newline included.
const MaxReport = 8 << 10

// Fields are r as an audit event's fields (audit.EventContainerRefused).
func (r Report) Fields() map[string]any {
	f := map[string]any{"check": r.Check, "field": r.Field, "reason": r.Reason}
	if r.Container != "" {
		f["container"] = r.Container
	}
	if r.Image != "" {
		f["image"] = r.Image
	}
	return f
}

// Send sends r to the session's events socket, waiting a second at most.
// A reason too long for one report is cut.
func Send(socket string, r Report) {
	b, err := json.Marshal(r)
	if err != nil || len(b) >= MaxReport {
		r.Reason = r.Reason[:min(len(r.Reason), MaxReport/2)]
		if b, err = json.Marshal(r); err != nil || len(b) >= MaxReport {
			return
		}
	}
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	conn.Write(append(b, '\n'))
}
