package session

import (
	"fmt"
	"os"
)

// watchAudit acts when the audit log ends (its cap reached, the disk full,
// a write failed) until done is closed. Whatever the command does from then
// on could go unrecorded, so nothing of it is let through: the egress and
// auth proxies close at once (new connections are refused, open ones cut),
// and the session is stopped. The log's reserve holds the end event, the
// signals and the stop.
func (s *supervisor) watchAudit(done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-s.audit.Ended():
	}
	why := s.audit.EndReason()
	s.mu.Lock()
	s.auditEnd = why
	s.mu.Unlock()
	if s.proxy != nil {
		s.proxy.Close()
	}
	if s.auth != nil {
		s.auth.Close()
	}
	fmt.Fprintf(os.Stderr, "stockade supervisor %s: audit log ended: %s; network closed, stopping the session\n", s.cfg.ID, why)
	s.requestStop("audit log ended")
}

// endReason is the reason the session ended as the store records it: the
// end of the audit log, when that is what stopped it.
func (s *supervisor) endReason(reason string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auditEnd != "" && reason == "stopped" {
		return "failed: audit log ended: " + s.auditEnd + "; the session was stopped so that nothing goes unrecorded"
	}
	return reason
}
