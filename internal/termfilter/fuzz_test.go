package termfilter

import (
	"bytes"
	"regexp"
	"testing"
)

// forbidden matches what must never come out, whatever went in: the
// introducers of the strings that never pass, C1 controls in UTF-8, and a
// DCS other than the kept ones.
var forbidden = regexp.MustCompile(`\x1b\]0*(52|7|9;[^4]|99|777|1337|5113|5522|50|46)[;\a\x1b]|\x1b[_^X]|\x1b%|\xc2[\x80-\x9f]|\x1b\[(2[01]|[1-9]|1[0-3])(;[0-9]*)*t|\x1bP([^$+=]|\$[^q]|\+[^q])|\x05`)

// FuzzFilter checks, for any stream and any cut: the output does not depend
// on where the stream was cut; filtering the output again changes nothing
// (it holds only text and whole sequences that pass); nothing forbidden
// comes out; and the filter never holds more than one sequence's worth.
func FuzzFilter(f *testing.F) {
	for _, tt := range cases {
		f.Add([]byte(tt.in), uint16(len(tt.in)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		k := int(cut) % (len(in) + 1)
		var whole Filter
		out := whole.Append(nil, in)
		var parts Filter
		split := parts.Append(nil, in[:k])
		if len(parts.seq) > maxSeq+1 {
			t.Fatalf("holds %d bytes", len(parts.seq))
		}
		split = parts.Append(split, in[k:])
		if !bytes.Equal(out, split) {
			t.Fatalf("cut at %d: %q, whole: %q", k, split, out)
		}
		var again Filter
		if twice := again.Append(nil, out); !bytes.Equal(twice, out) {
			t.Fatalf("not stable: %q -> %q -> %q", in, out, twice)
		}
		if m := forbidden.Find(out); m != nil {
			t.Fatalf("%q came out of %q: %q", m, in, out)
		}
	})
}
