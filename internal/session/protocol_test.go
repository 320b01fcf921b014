package session

import (
	"bufio"
	"bytes"
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
