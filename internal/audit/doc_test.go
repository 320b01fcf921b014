package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// byHandScript returns the shell script of docs/audit.md that checks a log
// with sed, jq and sha256sum.
func byHandScript(t *testing.T) string {
	t.Helper()
	// The test binary may run outside the package directory (as when run
	// as another user from /tmp): fall back to the path of this source file.
	b, err := os.ReadFile("../../docs/audit.md")
	if _, self, _, ok := runtime.Caller(0); err != nil && ok {
		b, err = os.ReadFile(filepath.Join(filepath.Dir(self), "../../docs/audit.md"))
	}
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- audit: by-hand check")
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	script, _, ok3 := strings.Cut(rest, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/audit.md has no by-hand script after its marker")
	}
	return script
}

// TestByHandCheck runs the documented script, so that the documentation of
// the hash stays true.
func TestByHandCheck(t *testing.T) {
	for _, tool := range []string{"sh", "sed", "jq", "sha256sum", "cut"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	script := filepath.Join(t.TempDir(), "check.sh")
	if err := os.WriteFile(script, []byte(byHandScript(t)), 0o755); err != nil {
		t.Fatal(err)
	}
	path, orig := writeLog(t, 4)
	tests := []struct {
		name   string
		tamper func([]string) []string
		want   string // output; "" means the check passes
	}{
		{"untouched", nil, ""},
		{"value changed", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"n":2`, `"n":5`, 1)
			return l
		}, "line 2: hash does not match its content\n"},
		{"line removed", func(l []string) []string { return slices.Delete(l, 1, 2) },
			"line 2: prev is not the hash of line 1\nline 2: seq is 3, not 2\nline 3: seq is 4, not 3\n"},
		{"tail cut", func(l []string) []string { return l[:3] }, "is not the last line (seq 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := slices.Clone(orig)
			if tt.tamper != nil {
				lines = tt.tamper(lines)
			}
			if err := os.WriteFile(path, []byte(joinLines(lines)), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("sh", script, path, HeadPath(path)).CombinedOutput()
			if (err == nil) != (tt.want == "") || !strings.Contains(string(out), tt.want) || tt.want == "" && len(out) > 0 {
				t.Errorf("script: %v, output:\n%s\nwant:\n%s", err, out, tt.want)
			}
		})
	}
}
