package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testSession = "a1b2c3"

// writeLog writes n "step" events to a new log in a temporary directory and
// returns its path and lines (without newlines).
func writeLog(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), testSession+".jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	fakeClock(w)
	for i := 1; i <= n; i++ {
		if err := w.Log(SourceSupervisor, "step", map[string]any{"n": i, "note": fmt.Sprintf("event %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, readLines(t, path)
}

// fakeClock makes w's times 2026-11-22T10:00:00Z plus one second per event.
func fakeClock(w *Writer) {
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return base.Add(time.Duration(w.seq) * time.Second) }
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// rehash recomputes a line's hash from its (edited) content, as a forger
// would.
func rehash(t *testing.T, line string) string {
	t.Helper()
	h, err := lineHash([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return line[:len(line)-hashSuffixLen] + `,"hash":"` + h + `"}`
}

func hashOf(t *testing.T, line string) string {
	t.Helper()
	ev, err := parseLine([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return ev.Hash
}
