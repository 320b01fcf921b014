package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReportEndBounded: the exit report the command's names fill stays far
// below the frame limit, and says how much the audit log has besides.
func TestReportEndBounded(t *testing.T) {
	s := &supervisor{cfg: Config{ID: "abc123"}}
	long := strings.Repeat("\u009b", 4000)
	for range 100 {
		s.reportEnd("REVIEW: " + long)
	}
	s.reportEnd("more")
	report := s.endReport()
	b, err := json.Marshal(Exit{Report: report})
	if err != nil || len(b) > maxFrame/2 {
		t.Fatalf("exit frame of %d bytes (%v), want well below %d", len(b), err, maxFrame)
	}
	kept := len(report) - 1
	last := report[kept]
	if want := "... and " + itoa(101-kept) + " more: stockade logs -s abc123"; !strings.HasPrefix(last, want) {
		t.Errorf("last line %q, want it to begin %q", last, want)
	}
	if report[0] != "more" {
		t.Errorf("first line %.40q, want the line that is not a plain REVIEW first", report[0])
	}
}

// TestReportEndUrgentFirst: a flood of files the command made (plain
// REVIEW lines, found first) cannot push the lines that need the user now
// out of the exit report.
func TestReportEndUrgentFirst(t *testing.T) {
	s := &supervisor{cfg: Config{ID: "abc123"}}
	for i := range 250 {
		s.reportEnd("REVIEW: .github/workflows/w" + itoa(i) + ".yml: created (file, 2 bytes)")
	}
	s.reportEnd("QUARANTINED: .envrc: created (file, 9 bytes)", "git: .git/config: core.fsmonitor set")
	report := s.endReport()
	if len(report) != maxReport+1 {
		t.Fatalf("%d lines, want %d and the pointer", len(report), maxReport)
	}
	if !strings.HasPrefix(report[0], "QUARANTINED: ") || !strings.HasPrefix(report[1], "git: ") {
		t.Errorf("the report begins %q, %q: want the QUARANTINED and git lines first", report[0], report[1])
	}
	if want := "... and 52 more: stockade logs -s abc123 has every one"; report[maxReport] != want {
		t.Errorf("last line %q, want %q", report[maxReport], want)
	}
}

// TestReportEndVisible: a name that is not UTF-8 reaches the client as the
// foreground run prints it, escaped, not turned into U+FFFD by the frame's
// JSON (two names would look the same).
func TestReportEndVisible(t *testing.T) {
	s := &supervisor{cfg: Config{ID: "abc123"}}
	s.reportEnd("REVIEW: .github/workflows/c\xff\xfe.yml: created")
	b, err := json.Marshal(Exit{Report: s.endReport()})
	if err != nil {
		t.Fatal(err)
	}
	var e Exit
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if want := `REVIEW: .github/workflows/c\xff\xfe.yml: created`; len(e.Report) != 1 || e.Report[0] != want {
		t.Errorf("the client gets %q, want %q", e.Report, want)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
