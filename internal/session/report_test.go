package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReportEndBounded: the exit report the command's names fill stays far
// below the frame limit, and says the audit log has the rest.
func TestReportEndBounded(t *testing.T) {
	s := &supervisor{cfg: Config{ID: "abc123"}}
	long := strings.Repeat("\u009b", 4000)
	for range 1000 {
		s.reportEnd("REVIEW: " + long)
	}
	b, err := json.Marshal(Exit{Report: s.ended})
	if err != nil || len(b) > maxFrame/2 {
		t.Fatalf("exit frame of %d bytes (%v), want well below %d", len(b), err, maxFrame)
	}
	if last := s.ended[len(s.ended)-1]; !strings.Contains(last, "stockade logs -s abc123") {
		t.Errorf("last line %q, want the pointer to the audit log", last)
	}
	s.reportEnd("more")
	if last := s.ended[len(s.ended)-1]; last == "more" {
		t.Errorf("a line was kept after the report was full")
	}
}
