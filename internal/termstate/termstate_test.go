package termstate

import (
	"strconv"
	"strings"
	"testing"
)

// TestUndo: what a program's output changed is put back, and nothing else;
// split anywhere, the output gives the same answer.
func TestUndo(t *testing.T) {
	for _, tt := range []struct {
		name, out, undo, detach string
	}{
		{"nothing written", "", "", "\x1b[J"},
		{"plain text", "hello\r\n", "\x1b[m", "\x1b[m\x1b[J"},
		{"colour left on", "\x1b[31mred", "\x1b[m", "\x1b[m\r\n\x1b[J"},
		// What Claude Code 2.1.330 sets, seen on a tmux pane.
		{"a full-screen agent",
			"\x1b[?1049h\x1b[?1000h\x1b[?1002h\x1b[?1003h\x1b[?1006h\x1b[?1004h\x1b[?2004h\x1b[?2031h\x1b[?25l\x1b[2J\x1b[H\x1b[38;3Hhi\x1b[?u\x1b[>0q",
			"\x1b[m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1006l\x1b[?2004l\x1b[?2031l\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f",
			"\x1b[m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1006l\x1b[?2004l\x1b[?2031l\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\x1b[J"},
		{"modes turned off again", "\x1b[?1049h\x1b[?1000;1006h\x1b[?25l\x1b[?1000;1006l\x1b[?25h\x1b[?1049l", "\x1b[m", "\x1b[m\x1b[J"},
		{"several modes in one", "\x1b[?1;7;2004l\x1b[?1;1004h", "\x1b[m\x1b[?1l\x1b[?7h\x1b[?1004l", "\x1b[m\x1b[?1l\x1b[?7h\x1b[?1004l\x1b[J"},
		{"synchronized output cut off", "\x1b[?1049h\x1b[?2026h\x1b[5;20r\x1b[?6h", "\x1b[?2026l\x1b[?6l\x1b[r\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\x1b7\x1b[r\x1b8", "\x1b[?2026l\x1b[?6l\x1b[r\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\x1b7\x1b[r\x1b8\x1b[J"},
		{"scroll region on the main screen", "\x1b[2;10r", "\x1b7\x1b[r\x1b8\x1b[m", "\x1b7\x1b[r\x1b8\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"scroll region reset", "\x1b[?1049h\x1b[2;10r\x1b[r", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\x1b[J"},
		{"keys and cursor", "\x1b=\x1b[4h\x1b[5 q\x1b[>1u\x1b[>3u\x1b[>4;2m", "\x1b[m\x1b[4l\x1b>\x1b[0 q\x1b[<2u\x1b[>4m", "\x1b[m\x1b[4l\x1b>\x1b[0 q\x1b[<2u\x1b[>4m\x1b[J"},
		{"kitty popped", "\x1b[>1u\x1b[<u", "\x1b[m", "\x1b[m\x1b[J"},
		{"kitty set at the base", "\x1b[=5u", "\x1b[m\x1b[=0;1u", "\x1b[m\x1b[=0;1u\x1b[J"},
		// Line drawing left on drew stockade's next lines, and the
		// shell's, as lines.
		{"a character set designated", "\x1b(0qqq", "\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b(B\x1b)B\x0f\r\n\x1b[J"},
		{"shifted out", "\x1b)0\x0eqqq", "\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b(B\x1b)B\x0f\r\n\x1b[J"},
		// Leaving 1049 restores the attributes saved on entry: they
		// are reset again after it.
		{"concealed, then the alternate screen", "\x1b[8m\x1b[?1049h", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\x1b[J"},
		{"reverse video and margins", "\x1b[?5h\x1b[?69h\x1b[79;80s", "\x1b[m\x1b[?5l\x1b[?69l", "\x1b[m\x1b[?5l\x1b[?69l\x1b[J"},
		{"legacy alternate screen", "\x1b[?47h", "\x1b[m\x1b[?47l\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b[?47l\x1b[m\x1b(B\x1b)B\x0f\x1b[999;1H\r\n\x1b[J"},
		{"soft reset", "\x1b[?25l\x1b[?1h\x1b[3;9r\x1b[!p", "\x1b[m", "\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"full reset", "\x1b[?1049h\x1b[?1000h\x1b[?25l\x1bc", "\x1b[m", "\x1b[m\x1b[999;1H\r\n\x1b[J"},
		// An inline interface draws below its cursor: the message goes
		// under the lowest line drawn.
		{"inline interface", "> \r\n  status line\x1b[1A\x1b[3G", "\x1b[m", "\x1b[m\x1b[1B\r\n\x1b[J"},
		{"redrawn shorter", "a\r\nb\r\nc\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2Kx\r\ny", "\x1b[m", "\x1b[m\x1b[1B\r\n\x1b[J"},
		{"saved and restored", "a\r\n\x1b7b\r\nc\r\nd\x1b8", "\x1b[m", "\x1b[m\x1b[2B\r\n\x1b[J"},
		{"SCO saved and restored", "a\r\n\x1b[sb\n\vc\f\x1b[u", "\x1b[m", "\x1b[m\x1b[3B\r\n\x1b[J"},
		{"reverse index", "a\r\nb\x1bM\x1bM", "\x1b[m", "\x1b[m\x1b[2B\r\n\x1b[J"},
		{"index and next line", "a\x1bD\x1bE\x1b[2F\x1b[B", "\x1b[m", "\x1b[m\x1b[1B\r\n\x1b[J"},
		{"scrolled", "a\r\nb\x1b[3S\x1b[2T", "\x1b[m", "\x1b[m\x1b[2B\r\n\x1b[J"},
		{"a line feed inside a CSI", "\x1b[\n1A", "\x1b[m", "\x1b[m\x1b[1B\r\n\x1b[J"},
		{"back to the first column", "ab\x1b[G", "\x1b[m", "\x1b[m\x1b[J"},
		{"to another column", "\r\n\x1b[5G", "\x1b[m", "\x1b[m\r\n\x1b[J"},
		{"text before the alternate screen", "$ \x1b[?1049h\x1b[Hdrawn\r\n", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\r\n\x1b[J"},
		{"far up", "\n\x1b[2000A", "\x1b[m", "\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"placed cursor", "\x1b[5;1Hx", "\x1b[m", "\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"moves on the alternate screen only", "\x1b[?1049h\x1b[5;1H\x1b[A\x1bM", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f", "\x1b[m\x1b[?1049l\x1b[m\x1b(B\x1b)B\x0f\x1b[J"},
		// Strings are skipped to their end (BEL, ST); an ESC ends them, as
		// on a terminal.
		{"strings", "\x1b]0;[?25l\x07\x1bP[?1000h\x1b\\\x1b_[?1049h\x1b\\", "\x1b[m", "\x1b[m\x1b[J"},
		{"an OSC cut by a sequence", "\x1b]0;title\x1b[?25l", "\x1b[m\x1b[?25h", "\x1b[m\x1b[?25h\x1b[J"},
		{"cancelled", "\x1b[?10\x1800h", "\x1b[m", "\x1b[m\r\n\x1b[J"},
		{"modes it does not track", "\x1b[?12h\x1b[?1048h\x1b[?9999h\x1b[?h", "\x1b[m", "\x1b[m\x1b[J"},
		{"a private marker out of place", "\x1b[25?l", "\x1b[m", "\x1b[m\x1b[J"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for split := 0; split <= len(tt.out); split++ {
				var s State
				s.Write([]byte(tt.out[:split]))
				s.Write([]byte(tt.out[split:]))
				if got := string(s.Undo()); got != tt.undo {
					t.Fatalf("split at %d: Undo = %q, want %q", split, got, tt.undo)
				}
				if got := string(s.Detach()); got != tt.detach {
					t.Fatalf("split at %d: Detach = %q, want %q", split, got, tt.detach)
				}
			}
		})
	}
}

// TestEveryMode: each mode of the table, changed from its default, is put
// back to it; at its default, left alone.
func TestEveryMode(t *testing.T) {
	for n, m := range decModes {
		set, reset := "l", "h"
		if !m.on {
			set, reset = "h", "l"
		}
		var s State
		s.Write([]byte("\x1b[?" + strconv.Itoa(n) + set))
		if got := string(s.Undo()); !strings.Contains(got, "\x1b[?"+strconv.Itoa(n)+reset) {
			t.Errorf("mode %d (%s) changed: Undo = %q", n, m.why, got)
		}
		s.Write([]byte("\x1b[?" + strconv.Itoa(n) + reset))
		if got := string(s.Undo()); got != "\x1b[m" {
			t.Errorf("mode %d back at its default: Undo = %q", n, got)
		}
	}
}

// FuzzState: any output is read without a panic, and Undo stays short.
func FuzzState(f *testing.F) {
	f.Add([]byte("\x1b[?1049h\x1b[?1000;1006h\x1b]0;t\x07\x1b[5;9r\x1b[>1u"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s State
		s.Write(b)
		if n := len(s.Detach()); n > 512 {
			t.Errorf("Detach is %d bytes", n)
		}
	})
}

// TestDetachAll: the outputs of one program on one terminal get each its
// undo and one move to a clean line, the one that holds whichever of them
// wrote last.
func TestDetachAll(t *testing.T) {
	state := func(out string) *State {
		var s State
		s.Write([]byte(out))
		return &s
	}
	for _, tt := range []struct {
		name string
		outs []string
		want string
	}{
		{"nothing written", []string{"", ""}, ""},
		{"one wrote", []string{"", "\x1b[5;1Hx"}, "\x1b[m\x1b[999;1H\r\n\x1b[J"},
		// Each follows only its own output: one may restore a cursor
		// the other saved (on forged text, mid-line).
		{"both at line starts", []string{"a\r\n", "b\r\n"}, "\x1b[m\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"one mid-line", []string{"a\r\n", "b"}, "\x1b[m\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"saved by one, restored by the other", []string{"forged ->\x1b7\r\n\n", "\x1b8"}, "\x1b[m\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"one moved up", []string{"a\r\nb\r\n", "\x1b[8m\x1b[1A"}, "\x1b[m\x1b[m\x1b[999;1H\r\n\x1b[J"},
		{"one placed", []string{"\x1b[H", "x\r\n"}, "\x1b[m\x1b[m\x1b[999;1H\r\n\x1b[J"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ss []*State
			for _, o := range tt.outs {
				ss = append(ss, state(o))
			}
			if got := string(DetachAll(ss...)); got != tt.want {
				t.Errorf("DetachAll = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTooManyParameters: a sequence with more parameters than the parser
// keeps may still act on a terminal (tmux takes 24, and a scroll region
// from the first two: the exit report then overwrote itself on the last
// line): everything is put back, and the message goes to the last line.
func TestTooManyParameters(t *testing.T) {
	for _, out := range []string{
		"\x1b[1;2" + strings.Repeat(";0", maxParams) + "r\x1b[999;1H",
		"\x1b[?" + strings.Repeat("1;", maxParams) + "1049h",
		"\x1b[?" + strings.Repeat("1;", maxParams) + "6h",
	} {
		var s State
		s.Write([]byte(out))
		undo, detach := string(s.Undo()), string(s.Detach())
		for _, want := range []string{"\x1b[r", "\x1b[?6l", "\x1b[?1049l", "\x1b[?25h", "\x1b[m"} {
			if !strings.Contains(undo, want) {
				t.Errorf("after %q, Undo = %q: want %q in it", out, undo, want)
			}
		}
		if !strings.HasSuffix(detach, "\x1b[999;1H\r\n\x1b[J") {
			t.Errorf("after %q, Detach = %q: want the move to the last line", out, detach)
		}
	}
}
