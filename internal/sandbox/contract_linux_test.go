//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// runtimePanics are the calls into the runtime init's code may hold: the
// panics of a bounds or shift check, which only a bug reaches (and which
// crash init, as the contract says).
var runtimePanics = regexp.MustCompile(`^runtime\.(panicBounds|panicIndex\w*|panicSlice\w*|panicshift|panicdivide|goPanic\w*)`)

// TestInitCallsNoRuntime checks the contract on the compiled code of
// stockade, as shipped and built with -race: no function init reaches
// calls into the runtime but for a panic, and none is instrumented.
func TestInitCallsNoRuntime(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipOrFail(t, "no go to build stockade: %v", err)
	}
	fset, files, info := loadPackage(t, ".", runtime.GOARCH)
	_, checked := checkContract(fset, files, info, initEntries[runtime.GOARCH])
	t.Run("shipped", func(t *testing.T) {
		exe := filepath.Join(t.TempDir(), "stockade")
		if err := testenv.Build(exe, "./cmd/stockade"); err != nil {
			t.Fatal(err)
		}
		checkCalls(t, exe, checked)
	})
	t.Run("race", func(t *testing.T) {
		if _, err := exec.LookPath("gcc"); err != nil {
			testenv.SkipOrFail(t, "no gcc for a -race build: %v", err)
		}
		exe := filepath.Join(t.TempDir(), "stockade")
		if err := testenv.BuildWith([]string{"CGO_ENABLED=1"}, exe, "./cmd/stockade", "-race"); err != nil {
			t.Fatal(err)
		}
		checkCalls(t, exe, checked)
	})
}

// checkCalls disassembles the functions named in checked (as checkContract
// names them) in the binary exe and reports each call into the runtime but
// runtimePanics.
func checkCalls(t *testing.T, exe string, checked []string) {
	t.Helper()
	var alts []string
	for _, name := range checked {
		if typ, m, ok := strings.Cut(name, "."); ok {
			alts = append(alts, `\(\*`+typ+`\)\.`+m)
		} else {
			alts = append(alts, name+`(\[.*\])?`)
		}
	}
	const pkg = "github.com/stockade-dev/stockade/internal/sandbox."
	re := "^" + regexp.QuoteMeta(pkg) + "(" + strings.Join(alts, "|") + ")$"
	out, err := exec.Command("go", "tool", "objdump", "-s", re, exe).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool objdump -s %s %s: %v\n%.2000s", re, exe, err, out)
	}
	fn, found := "", 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "TEXT" {
			fn = strings.TrimPrefix(f[1], pkg)
			found++
			continue
		}
		for i, w := range f {
			if (w == "CALL" || w == "BL") && i+1 < len(f) {
				callee := strings.TrimSuffix(f[i+1], "(SB)")
				if strings.HasPrefix(callee, "runtime.") && !runtimePanics.MatchString(callee) {
					t.Errorf("%s calls %s", fn, callee)
				}
			}
		}
	}
	if found < 10 {
		t.Errorf("objdump found %d of init's functions in %s (%v): the check saw next to nothing", found, exe, checked)
	}
}
