package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestReadRequest: every malformed request is one clear error, and a good
// one parses.
func TestReadRequest(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string // "" = accepted
	}{
		{`{"v":1,"op":"status"}` + "\n", ""},
		{`{"v":1,"op":"attach","rows":40,"cols":120}` + "\n", ""},
		{`{"v":1,"op":"network","action":"allow","target":"example.com"}` + "\n", ""},
		{`{"v":2,"op":"status"}` + "\n", "protocol version 2 is not supported"},
		{`{"v":1,"op":"restart"}` + "\n", `unknown op "restart"`},
		{`hello` + "\n", "not a JSON object"},
		{`{"v":1,"op":"status"}`, "reading request"},
		{strings.Repeat("x", maxRequest+10) + "\n", "longer than"},
	}
	for _, tt := range tests {
		_, err := readRequest(bufio.NewReaderSize(strings.NewReader(tt.in), maxRequest))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%.40q: %v", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%.40q: error %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

// TestFrames: frames round-trip; an oversized or short one is an error.
func TestFrames(t *testing.T) {
	var b bytes.Buffer
	writeFrame(&b, FrameResize, sizePayload(40, 120))
	writeFrame(&b, FrameInput, []byte("ls\n"))
	typ, p, err := readFrame(&b)
	if rows, cols, _ := parseSize(p); err != nil || typ != FrameResize || rows != 40 || cols != 120 {
		t.Errorf("resize frame: %c %v %v", typ, p, err)
	}
	if typ, p, err := readFrame(&b); err != nil || typ != FrameInput || string(p) != "ls\n" {
		t.Errorf("input frame: %c %q %v", typ, p, err)
	}
	if _, _, err := readFrame(bytes.NewReader([]byte{'o', 0xff, 0xff, 0xff, 0xff})); err == nil || !strings.Contains(err.Error(), "malformed frame") {
		t.Errorf("oversized frame: %v", err)
	}
	if _, _, err := parseSize([]byte{1, 2}); err == nil {
		t.Error("a short window size parses")
	}
}

// TestDocExamples: the requests docs/control-api.md shows are accepted, and
// its example of an error answer is the one the supervisor gives.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/control-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var requests, answers int
	for line := range strings.Lines(string(doc)) {
		switch {
		case strings.HasPrefix(line, `{"v": 1, "op"`):
			requests++
			if _, err := readRequest(bufio.NewReader(strings.NewReader(line))); err != nil {
				t.Errorf("docs/control-api.md: request %s: %v", strings.TrimSpace(line), err)
			}
		case strings.HasPrefix(line, `{"v": 1, "ok": false`):
			answers++
			var resp Response
			if err := json.Unmarshal([]byte(line), &resp); err != nil {
				t.Fatalf("docs/control-api.md: %s: %v", strings.TrimSpace(line), err)
			}
			op := strings.Split(resp.Error, `"`)[1]
			_, err := readRequest(bufio.NewReader(strings.NewReader(`{"v":1,"op":"` + op + `"}` + "\n")))
			if err == nil || err.Error() != resp.Error {
				t.Errorf("docs/control-api.md: error %q, the supervisor says %v", resp.Error, err)
			}
		}
	}
	if requests < 5 || answers != 1 {
		t.Errorf("docs/control-api.md: found %d requests and %d error answers; the test reads the examples' lines", requests, answers)
	}
}
