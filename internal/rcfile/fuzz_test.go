package rcfile

import (
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"A=1\n# c\nexport B='x y' # c\nC=\"a\\nb\\\"\"\n",
		"A=\"unterminated\nB=2",
		"\ufeffA=1\r\nB=#x",
		"A='\\n'",
		`A="\\"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Parse(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		escapedNewline := strings.Contains(in, `\n`)
		for k, v := range got {
			if !validName(k) {
				t.Errorf("invalid name %q accepted", k)
			}
			if strings.Contains(v, "\n") && !escapedNewline {
				t.Errorf("value of %s has a raw newline: %q", k, v)
			}
			if strings.ContainsAny(k, "\n\r") {
				t.Errorf("name %q has a line end", k)
			}
		}
	})
}
