package denial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
)

var t0 = time.Date(2026, 11, 25, 1, 2, 3, 0, time.UTC)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		event string
		f     map[string]any
		want  string
	}{
		{audit.EventNetworkDenied, map[string]any{"proto": "connect", "host": "example.com", "port": 443, "rule": "deny mode",
			"reason": "not in the allowlist (deny mode)", "fix": "stockade network agent allow -s abc example.com"},
			"2026-11-25T01:02:03Z connect example.com:443 | rule: deny mode | not in the allowlist (deny mode) | allow: stockade network agent allow -s abc example.com"},
		{audit.EventNetworkDenied, map[string]any{"proto": "socks5", "host": "::1", "port": json.Number("22"), "rule": "floor",
			"reason": "::1 is loopback", "fix": "stockade network agent allow -s abc ::1"},
			"2026-11-25T01:02:03Z socks5 [::1]:22 | rule: floor | ::1 is loopback | allow: stockade network agent allow -s abc ::1"},
		{audit.EventDNSDenied, map[string]any{"name": "evil.test", "qtype": "A", "rule": "deny mode", "reason": "r", "fix": "f"},
			"2026-11-25T01:02:03Z dns evil.test | rule: deny mode | r | allow: f"},
		// A name with a newline and a column separator in it (SOCKS5
		// carries any bytes) stays on its line and in its column.
		{audit.EventNetworkDenied, map[string]any{"proto": "socks5", "host": "a\n2026-11-25T00:00:00Z connect b | rule: x", "port": 80, "rule": "invalid", "reason": "bad"},
			`2026-11-25T01:02:03Z socks5 [a\x0a2026-11-25T00:00:00Z connect b \x7c rule: x]:80 | rule: invalid | bad`},
	} {
		d, ok := FromEvent(t0, tc.event, tc.f)
		if !ok {
			t.Fatalf("%v: not a denial", tc.f)
		}
		if got := d.Line(); got != tc.want {
			t.Errorf("Line:\n got %q\nwant %q", got, tc.want)
		}
	}
	for _, tc := range []struct {
		event string
		f     map[string]any
	}{
		{audit.EventDNSDenied, map[string]any{"reason": "rate limited", "dropped": 3}},
		{audit.EventConnection, map[string]any{"host": "example.com", "port": 443}},
	} {
		if _, ok := FromEvent(t0, tc.event, tc.f); ok {
			t.Errorf("%s %v read as a denial", tc.event, tc.f)
		}
	}
	// Long fields, and fields of characters each escaped to many bytes.
	for _, long := range []string{strings.Repeat("a", 5000), strings.Repeat("\x01", 5000), strings.Repeat("\u200b", 5000)} {
		d, _ := FromEvent(t0, audit.EventNetworkDenied, map[string]any{"proto": long, "host": long, "port": 1, "reason": long, "rule": long, "fix": long})
		if n := len(d.Line()); n > maxLine {
			t.Errorf("a line of long fields is %d bytes, more than %d", n, maxLine)
		}
	}
}

func TestFileBounded(t *testing.T) {
	t0 := t0.Add(-time.Hour)
	path := filepath.Join(t.TempDir(), "denials")
	var f File
	if err := f.Use(writeOnly(t, path)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("a new file: %v, %v", fi, err)
	}
	for i := range 1000 {
		if err := f.Add(Denial{Time: t0.Add(time.Duration(i) * time.Second), Proto: "connect", Host: fmt.Sprintf("h%d.example", i), Port: 443, Rule: "deny mode"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(header)) {
			t.Fatalf("after %d denials the file does not start with its header:\n%s", i+1, b)
		}
		lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(b), header), "\n"), "\n")
		if len(lines) > MaxLines || i+1 >= MaxLines && len(lines) < MaxLines/2 {
			t.Fatalf("after %d denials the file holds %d lines", i+1, len(lines))
		}
		if last := lines[len(lines)-1]; !strings.Contains(last, fmt.Sprintf(" h%d.example:443 ", i)) {
			t.Fatalf("after %d denials the last line is %q", i+1, last)
		}
	}
	// The same denial at once again (A and AAAA) is one line; later, another.
	size := func() int64 { fi, _ := os.Stat(path); return fi.Size() }
	before := size()
	d := Denial{Time: t0, Proto: "dns", Host: "again.example", Rule: "deny mode"}
	f.Add(d)
	once := size()
	f.Add(d)
	if size() != once || once == before {
		t.Errorf("a repeat at once: %d, then %d, then %d bytes", before, once, size())
	}
	d.Time = d.Time.Add(time.Minute)
	if f.Add(d); size() == once {
		t.Errorf("the same denial a minute later was not written")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// writeOnly makes path and opens it as init hands the file over: write-only.
func writeOnly(t *testing.T, path string) *os.File {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestFileUse: denials that come with no file in use are kept and written
// to the next; a session's command started again sees the earlier starts'
// denials in its new file, and the old file is closed.
func TestFileUse(t *testing.T) {
	dir := t.TempDir()
	var f File
	d := func(host string) Denial {
		return Denial{Time: t0, Proto: "connect", Host: host, Port: 443, Rule: "deny mode"}
	}
	if err := f.Add(d("before.example")); err != nil {
		t.Fatalf("a denial with no file in use: %v", err)
	}
	first := writeOnly(t, filepath.Join(dir, "1"))
	if err := f.Use(first); err != nil {
		t.Fatal(err)
	}
	f.Add(d("first.example"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Write([]byte("x")); err == nil {
		t.Error("Close left the file open")
	}
	f.Add(d("between.example"))
	if err := f.Use(writeOnly(t, filepath.Join(dir, "2"))); err != nil {
		t.Fatal(err)
	}
	third := writeOnly(t, filepath.Join(dir, "3"))
	f.Use(third)
	if _, err := third.Write(nil); err != nil {
		t.Fatalf("the file in use was closed: %v", err)
	}
	for name, want := range map[string][]string{
		"1": {"before.example", "first.example"},
		"2": {"before.example", "first.example", "between.example"},
		"3": {"before.example", "first.example", "between.example"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(b), header), "\n"), "\n")
		if len(lines) != len(want) {
			t.Errorf("file %s: %q, want %d lines", name, b, len(want))
			continue
		}
		for i, host := range want {
			if !strings.Contains(lines[i], " "+host+":443 ") {
				t.Errorf("file %s, line %d: %q, want %s", name, i+1, lines[i], host)
			}
		}
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	w, err := audit.OpenLimited(path, "abc", audit.Limits{NoSync: true, Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.Log(audit.SourceEgress, audit.EventNetworkDenied, map[string]any{"proto": "connect", "host": "one.example", "port": 443, "rule": "deny mode", "fix": "allow one"})
	w.Log(audit.SourceEgress, audit.EventConnection, map[string]any{"proto": "connect", "host": "ok.example", "port": 443})
	w.Log(audit.SourceEgress, audit.EventDNSDenied, map[string]any{"name": "two.example", "qtype": "AAAA", "rule": "deny mode"})
	// The same denial over and over: the log writes some and counts
	// the rest.
	for range 500 {
		w.Log(audit.SourceEgress, audit.EventNetworkDenied, map[string]any{"proto": "connect", "host": "many.example", "port": 443, "rule": "deny mode"})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep := Read(f)
	many := 0
	for _, d := range rep.Denials {
		if d.Host == "many.example" {
			many++
		}
	}
	if many+rep.Suppressed != 500 || rep.Suppressed == 0 {
		t.Errorf("500 denials: %d written, %d counted", many, rep.Suppressed)
	}
	if len(rep.Denials) != 2+many || rep.Denials[0].Host != "one.example" || rep.Denials[0].Port != 443 ||
		rep.Denials[0].Fix != "allow one" || rep.Denials[1].Host != "two.example" || rep.Denials[1].Proto != "dns" {
		t.Errorf("Read: %+v", rep.Denials)
	}
}
