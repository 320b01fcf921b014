package ocihook

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
