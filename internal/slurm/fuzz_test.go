package slurm

import (
	"testing"
)

// FuzzParse: any command line parses or is refused without a panic, and
// what the chaperon passes on (each option under its full name) parses
// back to the same options: Slurm sees what was checked.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"-p\x00debug\x00job.sh", "--uid=0", "--wrap\x00echo $(id)", "-J\x00a\nb", "--exclusive=user\x00--\x00x", "-t10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := splitNUL(line)
		p, err := parse(sbatchFlags(), args)
		if err != nil {
			return
		}
		var again []string
		for _, o := range p.opts {
			again = append(again, o.line())
		}
		q, err := parse(sbatchFlags(), again)
		if err != nil {
			t.Fatalf("%q parsed, but its full form %q does not: %v", args, again, err)
		}
		if len(q.opts) != len(p.opts) || len(q.rest) != 0 {
			t.Fatalf("%q: full form %q parses to %d options and %q", args, again, len(q.opts), q.rest)
		}
		for i := range p.opts {
			if p.opts[i].flag.Long != q.opts[i].flag.Long || p.opts[i].value != q.opts[i].value {
				t.Fatalf("%q: option %d is %v=%q, its full form %v=%q", args, i, p.opts[i].flag.Long, p.opts[i].value, q.opts[i].flag.Long, q.opts[i].value)
			}
		}
	})
}

func splitNUL(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
