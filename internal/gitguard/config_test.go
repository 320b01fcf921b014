package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

var parseCases = []struct {
	name, in string
	want     []string // entry.String() of each entry
	badLine  int      // 0: parses
}{
	{"sections and keys", "[core]\n\tbare = false\n\tFileMode = true\n", []string{`core.bare = "false"`, `core.filemode = "true"`}, 0},
	{"key on the header line", "[core] fsmonitor = x\n", []string{`core.fsmonitor = "x"`}, 0},
	{"boolean without value", "[core]\n\tbare\n", []string{"core.bare"}, 0},
	{"empty value", "[core]\n\tpager =\n", []string{`core.pager = ""`}, 0},
	{"quoted subsection keeps case", "[Remote \"Origin\"]\n\tURL = x\n", []string{`remote.Origin.url = "x"`}, 0},
	{"legacy subsection lowercased", "[Sec.Sub]\nKey = v\n", []string{`sec.sub.key = "v"`}, 0},
	{"escaped quote in subsection", "[remote \"a\\\"b\"]\nurl = x\n", []string{`remote.a"b.url = "x"`}, 0},
	{"quotes and comments", "[core]\n\tfsmonitor = \"a;b\" ; comment\n", []string{`core.fsmonitor = "a;b"`}, 0},
	{"hash comment", "[core]\n\tpager = less # x\n", []string{`core.pager = "less"`}, 0},
	{"continuation", "[core]\n\tpager = a \\\n  b\n", []string{`core.pager = "a   b"`}, 0},
	{"escapes", "[a]\nb = \"x\\ty\\n\\\\\"\n", []string{`a.b = "x\ty\n\\"`}, 0},
	{"inner blanks kept, outer dropped", "[a]\nb =   x  y  \n", []string{`a.b = "x  y"`}, 0},
	{"crlf", "[a]\r\nb = 1\r\n", []string{`a.b = "1"`}, 0},
	{"bom", "\xef\xbb\xbf[a]\nb = 1\n", []string{`a.b = "1"`}, 0},
	{"comment lines", "# x\n; y\n[a]\n# z\nb = 1\n", []string{`a.b = "1"`}, 0},
	{"no final newline", "[a]\nb = 1", []string{`a.b = "1"`}, 0},
	{"key before any section", "b = 1\n", []string{`b = "1"`}, 0},
	{"dashes in names", "[a-b]\nc-d = 1\n", []string{`a-b.c-d = "1"`}, 0},
	{"key starting with a digit", "[a]\n1b = 1\n", nil, 2},
	{"unterminated quote", "[a]\nb = \"x\n", nil, 2},
	{"unknown escape", "[a]\nb = \\q\n", nil, 2},
	{"junk after subsection", "[a \"x\"y]\nb = 1\n", nil, 1},
	{"unterminated header", "[core\n", nil, 1},
	{"empty header", "[]\n", nil, 1},
	{"no equals", "[a]\nb c\n", nil, 2},
	{"bad header keeps the entries before", "[a]\nb = 1\n[c d]\n", []string{`a.b = "1"`}, 3},
}

func TestParseConfig(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := parseConfig([]byte(tc.in))
			var got []string
			for _, e := range es {
				got = append(got, e.String())
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("entries %q, want %q", got, tc.want)
			}
			switch {
			case tc.badLine == 0 && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.badLine != 0 && (err == nil || !strings.Contains(err.Error(), "line "+strconv.Itoa(tc.badLine)+" ")):
				t.Errorf("error %v, want one about line %d", err, tc.badLine)
			}
		})
	}
}

// TestParseConfigAgainstGit reads the cases with the host's git, when there
// is one, and compares: the parser must see what git sees.
func TestParseConfigAgainstGit(t *testing.T) {
	git := hostGit(t)
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "config")
			if err := os.WriteFile(f, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(git, "config", "--file", f, "--list", "--null").Output()
			if tc.badLine != 0 {
				if err == nil {
					t.Errorf("git reads it: %q", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("git config: %v", err)
			}
			es, _ := parseConfig([]byte(tc.in))
			var got, want []string
			for _, e := range es {
				if e.HasValue {
					got = append(got, e.Key+"\n"+e.Value)
				} else {
					got = append(got, e.Key) // --null: a key alone has no newline
				}
			}
			for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
				want = append(want, kv)
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("parsed %q, git says %q", got, want)
			}
		})
	}
}

// hostGit finds git for the tests that compare with it or drive it.
func hostGit(t *testing.T) string {
	git, err := exec.LookPath("git")
	if err != nil {
		testenv.SkipOrFail(t, "no git: %v", err)
	}
	return git
}
