package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestBuildModes: the builds a user may make instead of the shipped one
// (testenv.ShippedEnv) run a sandbox, as a new user would try them:
// `stockade run -- sh -c 'echo hi'` with stdin not a terminal. With cgo
// (the default of `go build` wherever gcc is), init once died of SIGSEGV
// in every sandbox and the supervisor waited forever; these builds keep
// init's copy of the supervisor's memory (internal/sandbox, dropMemory).
func TestBuildModes(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.SkipOrFail(t, "no gcc for a cgo build: %v", err)
	}
	// The shipped build drops the memory, and says nothing of it.
	if r := newEnv(t).run("", nil, "run", "--", "true"); r.code != 0 || strings.Contains(r.stderr, "keeps a copy") {
		t.Fatalf("the shipped build: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		name  string
		env   []string
		flags []string
	}{
		{"cgo", []string{"CGO_ENABLED=1"}, nil},
		{"cgo pie", []string{"CGO_ENABLED=1"}, []string{"-buildmode=pie"}},
		{"cgo external linker", []string{"CGO_ENABLED=1"}, []string{"-ldflags=-linkmode=external"}},
		{"race", []string{"CGO_ENABLED=1"}, []string{"-race"}},
		// Without cgo, a PIE still has the dynamic loader mapped (AT_BASE),
		// which sets up the main thread's TLS and rseq.
		{"pie without cgo", []string{"CGO_ENABLED=0"}, []string{"-buildmode=pie"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "stockade")
			if err := testenv.BuildWith(tc.env, bin, "./cmd/stockade", tc.flags...); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--", "sh", "-c", "echo hi")
			cmd.Dir, cmd.Env = e.workdir, e.vars
			cmd.Stdin = strings.NewReader("")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("stockade (%s) still runs after 60s: stderr:\n%s", tc.name, stderr.String())
			}
			if err != nil || stdout.String() != "hi\n" {
				t.Fatalf("stockade (%s) run -- sh -c 'echo hi': %v, stdout %q, stderr:\n%s", tc.name, err, stdout.String(), stderr.String())
			}
			// The weaker wall is said where the user sees it.
			if !strings.Contains(stderr.String(), "LOOSENED: sandbox init keeps a copy of stockade's memory") {
				t.Fatalf("stockade (%s) does not say that init keeps its memory:\n%s", tc.name, stderr.String())
			}
		})
	}
}
