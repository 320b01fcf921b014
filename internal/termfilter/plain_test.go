package termfilter

import "testing"

func TestPlain(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"text", "out\n", "out\n"},
		{"crlf", "a\r\nb\r\n", "a\nb\n"},
		{"colours", "\x1b[1;31mred\x1b[0m\n", "red\n"},
		{"spinner keeps its last state", "\r| working\r/ working\r- done\n", "- done\n"},
		{"backspace", "abx\bc\n", "abc\n"},
		{"backspace over a character", "aé\bb\n", "ab\n"},
		{"title and hyperlink", "\x1b]0;title\x07\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
		{"alternate screen and placement", "\x1b[?1049h\x1b[1;1Hone\x1b[2;1Htwo\x1b[?1049l\n", "one\ntwo\n"},
		{"bell and shifts", "a\x07b\x0ec\x0f\n", "abc\n"},
		{"dropped sequence", "a\x1b]52;c;ZXZpbA==\x07b\n", "ab\n"},
		{"unfinished last line", "last", "last\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Plain
			var out []byte
			for i := range len(tc.in) { // byte by byte: any split
				out = p.Append(out, []byte{tc.in[i]})
			}
			out = p.Flush(out)
			if string(out) != tc.want {
				t.Errorf("Plain(%q) = %q, want %q", tc.in, out, tc.want)
			}
		})
	}
}
