package termfilter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

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

// TestJSON: what a terminal would act on or hide inside a JSON string is
// written as a \u escape; the text decodes to the same value, and its
// white space is left alone.
func TestJSON(t *testing.T) {
	in := map[string]string{"name": "a\u009b31mb\u202etxt.exe\U000e0041c\u200bd\x7fé\n\t\x1b"}
	var buf bytes.Buffer
	enc := json.NewEncoder(JSONWriter(&buf))
	enc.SetIndent("", "  ")
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"\u009b", "\u202e", "\U000e0041", "\u200b", "\x7f", "\x1b"} {
		if strings.Contains(out, bad) {
			t.Errorf("JSON output %q holds %q", out, bad)
		}
	}
	for _, want := range []string{`\u009b`, `\u202e`, `\udb40\udc41`, `\u200b`, `\u007f`, "é", "\n  \"name\""} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON output %q lacks %q", out, want)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["name"] != in["name"] {
		t.Errorf("JSON output %q decodes to %q (%v), want %q", out, back["name"], err, in["name"])
	}
	if plain := []byte(`{"a":"b"}` + "\n"); string(JSON(plain)) != string(plain) {
		t.Errorf("JSON(%q) = %q, want it unchanged", plain, JSON(plain))
	}
}
