package termfilter

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
)

const (
	ESC = "\x1b"
	ST  = "\x1b\\"
	BEL = "\a"
)

// cases: what goes in, what must come out, and the class of what is dropped
// ("" when nothing is).
var cases = []struct {
	name, in, want string
	dropped        Class
}{
	// Text.
	{"ascii", "hello\r\nworld\t!", "hello\r\nworld\t!", ""},
	{"utf-8", "héllo ✳ 日本 🙂", "héllo ✳ 日本 🙂", ""},
	{"c0 controls", "a\b\x00\x0e\x0fb" + BEL, "a\b\x00\x0e\x0fb" + BEL, ""},
	{"enq answerback", "a\x05b", "ab", ClassControl},
	{"utf-8 C1 OSC", "a\xc2\x9d52;c;eA==" + BEL + "b", "a52;c;eA==" + BEL + "b", ClassControl},
	{"utf-8 C1 CSI", "\xc2\x9b21t", "21t", ClassControl},
	{"stray 8-bit OSC", "a\x9d52;c;eA==\ab", "a52;c;eA==\ab", ClassControl},
	{"9d inside a character passes", "\xe2\x80\x9d", "\xe2\x80\x9d", ""},
	{"lone C2", "\xc2a", "a", ""},
	{"C2 A0 (nbsp)", "\xc2\xa0", "\xc2\xa0", ""},
	{"invalid bytes above 9f pass", "\xa0\xff", "\xa0\xff", ""},
	{"overlong C1", "\xe0\x82\x9d", "\xe0", ClassControl},

	// What TUIs need.
	{"sgr", ESC + "[1;38;2;10;20;30mX" + ESC + "[0m", ESC + "[1;38;2;10;20;30mX" + ESC + "[0m", ""},
	{"sgr colon", ESC + "[38:2::1:2:3m", ESC + "[38:2::1:2:3m", ""},
	{"cursor and erase", ESC + "[H" + ESC + "[2J" + ESC + "[10;5H" + ESC + "[K", ESC + "[H" + ESC + "[2J" + ESC + "[10;5H" + ESC + "[K", ""},
	{"modes", ESC + "[?1049h" + ESC + "[?2004h" + ESC + "[?1000;1006h" + ESC + "[?2026h" + ESC + "[?25l", ESC + "[?1049h" + ESC + "[?2004h" + ESC + "[?1000;1006h" + ESC + "[?2026h" + ESC + "[?25l", ""},
	{"cursor position report", ESC + "[6n", ESC + "[6n", ""},
	{"device attributes", ESC + "[c" + ESC + "[>c" + ESC + "[=c", ESC + "[c" + ESC + "[>c" + ESC + "[=c", ""},
	{"xtversion and decrqm", ESC + "[>0q" + ESC + "[?2026$p", ESC + "[>0q" + ESC + "[?2026$p", ""},
	{"kitty keyboard", ESC + "[?u" + ESC + "[>1u" + ESC + "[<u", ESC + "[?u" + ESC + "[>1u" + ESC + "[<u", ""},
	{"cursor style", ESC + "[5 q", ESC + "[5 q", ""},
	{"simple esc", ESC + "7" + ESC + "8" + ESC + "M" + ESC + "=" + ESC + "c", ESC + "7" + ESC + "8" + ESC + "M" + ESC + "=" + ESC + "c", ""},
	{"charsets", ESC + "(0q" + ESC + "(B" + ESC + ")%5", ESC + "(0q" + ESC + "(B" + ESC + ")%5", ""},
	{"title bel", ESC + "]0;✳ Claude Code" + BEL, ESC + "]0;✳ Claude Code" + BEL, ""},
	{"title st", ESC + "]2;codex" + ST, ESC + "]2;codex" + ST, ""},
	{"title with controls", ESC + "]2;a\nb\x7fc" + BEL, ESC + "]2;abc" + BEL, ""},
	{"title c1 st", ESC + "]2;x\xc2\x9cy", ESC + "]2;x" + ST + "y", ""},
	{"title ended by a sequence", ESC + "]2;x" + ESC + "[1m", ESC + "]2;x" + ST + ESC + "[1m", ""},
	{"title stack and sizes", ESC + "[22;0t" + ESC + "[23;0t" + ESC + "[14t" + ESC + "[16t" + ESC + "[18t", ESC + "[22;0t" + ESC + "[23;0t" + ESC + "[14t" + ESC + "[16t" + ESC + "[18t", ""},
	{"colour queries", ESC + "]11;?" + BEL + ESC + "]10;?;?" + ST + ESC + "]4;0;?;15;?" + ST, ESC + "]11;?" + BEL + ESC + "]10;?;?" + ST + ESC + "]4;0;?;15;?" + ST, ""},
	{"colour resets", ESC + "]104" + ST + ESC + "]110" + BEL + ESC + "]104;1;2" + ST, ESC + "]104" + ST + ESC + "]110" + BEL + ESC + "]104;1;2" + ST, ""},
	{"hyperlink", ESC + "]8;;https://example.com/a;b" + ST + "link" + ESC + "]8;;" + ST, ESC + "]8;;https://example.com/a;b" + ST + "link" + ESC + "]8;;" + ST, ""},
	{"hyperlink file with id", ESC + "]8;id=1;file:///w/main.go" + BEL, ESC + "]8;id=1;file:///w/main.go" + BEL, ""},
	{"progress", ESC + "]9;4;1;50" + BEL + ESC + "]9;4;0" + BEL, ESC + "]9;4;1;50" + BEL + ESC + "]9;4;0" + BEL, ""},
	{"decrqss sgr", ESC + "P$qm" + ST, ESC + "P$qm" + ST, ""},
	{"xtgettcap", ESC + "P+q544e;524742" + ST, ESC + "P+q544e;524742" + ST, ""},
	{"sync dcs", ESC + "P=1s" + ST + "x" + ESC + "P=2s" + ST, ESC + "P=1s" + ST + "x" + ESC + "P=2s" + ST, ""},
	{"c0 inside csi runs first", ESC + "[3\n1m", "\n" + ESC + "[31m", ""},

	// What they do not.
	{"osc 52 set", "a" + ESC + "]52;c;ZWNobyBwd25lZAo=" + BEL + "b", "ab", ClassClipboard},
	{"osc 52 set st", "a" + ESC + "]52;c;ZWNobyBwd25lZAo=" + ST + "b", "ab", ClassClipboard},
	{"osc 52 query", ESC + "]52;c;?" + BEL, "", ClassClipboard},
	{"osc 52 c1 st", ESC + "]52;c;eA==\xc2\x9cb", "b", ClassClipboard},
	{"osc 52 ended by esc", ESC + "]52;c;eA==" + ESC + "[1m", ESC + "[1m", ClassClipboard},
	{"osc 52 aborted by can", ESC + "]52;c;eA==\x18b", "b", ClassClipboard},
	{"osc 52 padded number", ESC + "]0052;c;eA==" + BEL, "", ClassClipboard},
	{"title report", ESC + "[21t" + ESC + "[20t", "", ClassTitleReport},
	{"window ops", ESC + "[9;1t" + ESC + "[3;0;0t" + ESC + "[8;100;100t" + ESC + "[2t" + ESC + "[t" + ESC + "[30t", "", ClassTitleReport},
	{"title modes", ESC + "[>0t" + ESC + "[>3T", "", ClassCSI},
	{"printer", ESC + "[5i" + ESC + "[?5i", "", ClassCSI},
	{"screen checksum", ESC + "[1;1;1;1;1;1*y", "", ClassCSI},
	{"malformed csi", ESC + "[1?2h", "", ClassCSI},
	{"colour set", ESC + "]11;#000000" + BEL + ESC + "]4;1;rgb:0/0/0" + ST + ESC + "]10;?;red" + BEL, "", ClassColourSet},
	{"osc 7 cwd", ESC + "]7;file://host/etc" + BEL, "", ClassTerminalCmd},
	{"osc 1337 file", ESC + "]1337;File=name=eA==;inline=1:AAAA" + BEL, "", ClassTerminalCmd},
	{"osc 5113 file transfer", ESC + "]5113;ac=send;id=x" + ST, "", ClassTerminalCmd},
	{"notifications", ESC + "]9;hello" + BEL + ESC + "]777;notify;t;b" + BEL + ESC + "]99;;hi" + ST, "", ClassNotify},
	{"osc 50 font", ESC + "]50;?" + BEL, "", ClassTerminalCmd},
	{"osc 133 and 633", ESC + "]133;A" + BEL + ESC + "]633;E;ls" + BEL, "", ClassOSC},
	{"osc not a number", ESC + "]l title" + ST, "", ClassOSC},
	{"hyperlink scheme", ESC + "]8;;vscode://x/y" + ST + ESC + "]8;;ssh://h" + ST + ESC + "]8;;javascript:x" + ST, "", ClassOSC},
	{"hyperlink with space", ESC + "]8;;https://a b" + ST, "", ClassOSC},
	{"hyperlink non-ascii", ESC + "]8;;https://ä" + ST, "", ClassOSC},
	{"title with C1", ESC + "]2;x\xc2\x9by" + BEL + "z", "z", ClassOSC},
	{"title with stray byte", ESC + "]2;x\x9dy" + BEL + "z", "z", ClassOSC},
	{"title cut mid-character", ESC + "]2;x\xe2\x9c" + BEL + "z", "z", ClassOSC},
	{"title over the limit", ESC + "]2;" + strings.Repeat("x", maxSeq) + BEL + "z", "z", ClassOSC},
	{"progress with text", ESC + "]9;4;1;50;x" + BEL, "", ClassNotify},
	{"sixel", ESC + "Pq#0;2;0;0;0#0~~" + ST + "z", "z", ClassDCS},
	{"decudk", ESC + "P1;1|17/6563686f" + ST, "", ClassDCS},
	{"tmux passthrough", ESC + "Ptmux;" + ESC + ESC + "]52;c;eA==" + BEL + ST + "z", "z", ClassDCS},
	{"kitty remote control", ESC + "P@kitty-cmd{\"cmd\":\"launch\"}" + ST, "", ClassDCS},
	{"decrqss unknown", ESC + "P$qecho pwned" + ST, "", ClassDCS},
	{"xtgettcap not hex", ESC + "P+qrm -rf" + ST, "", ClassDCS},
	{"xtsettcap", ESC + "P+p544e" + ST, "", ClassDCS},
	{"apc kitty graphics", ESC + "_Ga=T,t=f;L2V0Yy9wYXNzd2Q=" + ST + "z", "z", ClassAPC},
	{"pm and sos", ESC + "^x" + ST + ESC + "Xy" + ST + "z", "z", ClassAPC},
	{"docs leaves utf-8", ESC + "%@" + ESC + "%G", "", ClassESC},
	{"s8c1t", ESC + " G", "", ClassESC},
	{"decid", ESC + "Z", "", ClassESC},
	{"screen title", ESC + "kname" + ST, "name", ClassESC},
	{"lone st", "a" + ST + "b", "ab", ClassESC},
	{"esc esc", ESC + ESC + "[1m", ESC + "[1m", ""},
	{"esc can", ESC + "\x18a", "a", ""},
	{"csi can", ESC + "[3\x18a", "a", ""},
	{"csi non-ascii", ESC + "[3é", "é", ""},
	{"csi over the limit", ESC + "[" + strings.Repeat("1;", maxCSI) + "m", "", ClassCSI},
	{"enq inside csi", ESC + "[\x05m", ESC + "[m", ""},
}

func filterAll(in string, chunks ...int) (string, []Class) {
	var got []Class
	f := Filter{Dropped: func(c Class) { got = append(got, c) }}
	var out []byte
	rest := []byte(in)
	for _, n := range chunks {
		out = f.Append(out, rest[:n])
		rest = rest[n:]
	}
	return string(f.Append(out, rest)), got
}

func TestFilter(t *testing.T) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, dropped := filterAll(tt.in)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tt.dropped == "" && len(dropped) > 0 || tt.dropped != "" && (len(dropped) == 0 || dropped[0] != tt.dropped) {
				t.Errorf("dropped %q, want %q", dropped, tt.dropped)
			}
		})
	}
}

// TestSplit: every case cut at every byte, and fed one byte at a time,
// gives the same output.
func TestSplit(t *testing.T) {
	for _, tt := range cases {
		for cut := 0; cut <= len(tt.in); cut++ {
			if got, _ := filterAll(tt.in, cut); got != tt.want {
				t.Fatalf("%s cut at %d: got %q, want %q", tt.name, cut, got, tt.want)
			}
		}
		ones := make([]int, len(tt.in))
		for i := range ones {
			ones[i] = 1
		}
		if got, _ := filterAll(tt.in, ones...); got != tt.want {
			t.Fatalf("%s one byte at a time: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestAllCasesAtOnce: the cases back to back, as one stream, give their
// outputs back to back: no case leaves state behind for the next.
func TestAllCasesAtOnce(t *testing.T) {
	var in, want strings.Builder
	for _, tt := range cases {
		if strings.HasSuffix(tt.in, "\xc2") || tt.name == "title cut mid-character" {
			continue
		}
		in.WriteString(tt.in + "\r\n")
		want.WriteString(tt.want + "\r\n")
	}
	if got, _ := filterAll(in.String()); got != want.String() {
		t.Errorf("back to back:\n got %q\nwant %q", got, want.String())
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	var dropped []Class
	w := NewWriter(&b, func(c Class) { dropped = append(dropped, c) })
	in := "x" + ESC + "]52;c;eA==" + BEL + ESC + "[1my"
	r := iotest.OneByteReader(strings.NewReader(in))
	buf := make([]byte, 1)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if m, err := w.Write(buf[:n]); m != n || err != nil {
				t.Fatalf("Write: %d, %v", m, err)
			}
		}
		if err != nil {
			break
		}
	}
	if b.String() != "x"+ESC+"[1my" || len(dropped) != 1 || dropped[0] != ClassClipboard {
		t.Errorf("got %q, dropped %q", b.String(), dropped)
	}
}

// TestTables: every kept entry has a reason.
func TestTables(t *testing.T) {
	for k, v := range keptESC {
		if v == "" || !escAllowed([]byte(k)) {
			t.Errorf("ESC %q: %q", k, v)
		}
	}
	for k, v := range deniedCSI {
		if ok, _ := csiAllowed([]byte(k)); v == "" || ok && k != "t" {
			t.Errorf("CSI %q: %q", k, v)
		}
	}
	for n, r := range keptOSC {
		if r.why == "" || r.check == nil {
			t.Errorf("OSC %d has no reason or check", n)
		}
	}
	for k, r := range keptDCS {
		if r.why == "" || r.check == nil || !dcsAllowed([]byte(k)) {
			t.Errorf("DCS %q has no reason or check", k)
		}
	}
	for _, m := range []map[string]string{keptWindowOps, keptDECRQSS} {
		for k, v := range m {
			if v == "" {
				t.Errorf("%q has no reason", k)
			}
		}
	}
}

// BenchmarkFilter: a TUI frame, mostly SGR and text.
func BenchmarkFilter(b *testing.B) {
	frame := []byte(strings.Repeat(ESC+"[38;5;245m│"+ESC+"[0m some text of a line, with ✳ and colour "+ESC+"[1;32mok"+ESC+"[0m\r\n", 200))
	var f Filter
	out := make([]byte, 0, len(frame))
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		out = f.Append(out[:0], frame)
	}
}
