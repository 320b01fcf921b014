package termfilter

import "testing"

// TestVisible: what a terminal would act on is written out; text, tabs and
// other scripts are left alone.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.yml":               "plain/path.yml",
		"tab\there, ünïcødé 名前":        "tab\there, ünïcødé 名前",
		"a\x1b]52;c;SGVsbG8=\x07b.yml": `a\x1b]52;c;SGVsbG8=\x07b.yml`,
		"line\nstockade: all clear":    `line\x0astockade: all clear`,
		"c1 \u009b31m and del \x7f":    `c1 \u009b31m and del \x7f`,
		"bidi \u202egnp.exe":           `bidi \u202egnp.exe`,
		"bad utf-8 \xff\xfe":           `bad utf-8 \xff\xfe`,
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}
