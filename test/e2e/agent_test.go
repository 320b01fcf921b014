package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cannedReply and providerLog come from test/netenv/server (the fake
// provider on the test host).
const (
	cannedReply  = "CANNED-REPLY-FROM-THE-FAKE-PROVIDER"
	providerLog  = "/run/stk-testnet-provider.log"
	fakeProvider = "http://198.51.100.10:8080"
)

// requireClaude finds the real Claude Code CLI: $STOCKADE_AGENT_BIN (a
// directory) or the PATH. CI installs a pinned version with npm.
func requireClaude(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PATH")
	if d := os.Getenv("STOCKADE_AGENT_BIN"); d != "" {
		path = d + ":" + path
	}
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, "claude"); isExec(p) {
			real, err := filepath.EvalSymlinks(p)
			if err == nil {
				return real
			}
		}
	}
	if os.Getenv("STOCKADE_MUST_WORK") == "1" {
		t.Fatal("Claude Code is not installed (npm install -g @anthropic-ai/claude-code); scripts/test.sh installs it")
	}
	t.Skip("Claude Code is not installed")
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// TestAgentClaude runs the real Claude Code in `stockade claude -p` against
// the fake provider on the test host: the CLI prints the canned reply, the
// provider got the real key, and the real key is nowhere inside the
// sandbox (environment, /proc, the sandbox HOME).
func TestAgentClaude(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	claude := requireClaude(t)
	e := newEnv(t)
	suffix := make([]byte, 8)
	rand.Read(suffix)
	half1, half2 := "sk-ant-api03-REALKEY", "-"+hex.EncodeToString(suffix)
	realKey := half1 + half2

	// A wrapper in front of the real CLI looks for the key from inside,
	// without holding it whole itself, then hands over to the CLI.
	wrap := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(wrap, 0o755)
	os.Chmod(filepath.Dir(wrap), 0o755)
	script := fmt.Sprintf(`#!/bin/sh
A='%s'; B='%s'
if grep -aqF "$A$B" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null || grep -rqF "$A$B" "$HOME" /tmp 2>/dev/null; then echo KEY-LEAKED; else echo KEY-ABSENT; fi
echo "inside: ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY ANTHROPIC_BASE_URL=$ANTHROPIC_BASE_URL"
exec %s "$@"
`, half1, half2, claude)
	os.WriteFile(filepath.Join(wrap, "claude"), []byte(script), 0o755)

	pkg := filepath.Dir(filepath.Dir(claude)) // the npm package of the CLI
	r := e.run("", []string{"ANTHROPIC_API_KEY=" + realKey, "PATH=" + wrap + ":/usr/local/bin:/usr/bin:/bin"},
		"claude", "--ro", pkg, "--upstream", "anthropic="+fakeProvider, "--", "-p", "Say something.")
	if r.code != 0 {
		t.Fatalf("stockade claude: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"KEY-ABSENT", "ANTHROPIC_API_KEY=sk-proxy", "ANTHROPIC_BASE_URL=http://127.0.0.1:2376/anthropic", cannedReply} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, realKey) {
		t.Error("the real key appears in stockade's output")
	}
	// The provider saw the real key, and never the placeholder.
	f, err := os.Open(providerLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seen, dummy int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.Contains(sc.Text(), `"x_api_key":"`+realKey+`"`) {
			seen++
		}
		if strings.Contains(sc.Text(), "sk-proxy") {
			dummy++
		}
	}
	if seen == 0 || dummy > 0 {
		t.Errorf("provider log: %d requests with the real key, %d with the placeholder", seen, dummy)
	}
	// Nothing the CLI left in its sandbox HOME holds the key.
	home := filepath.Join(e.home, ".local/share/stockade/home/claude")
	if out, _ := exec.Command("grep", "-rlF", realKey, home).Output(); len(out) > 0 {
		t.Errorf("the real key is in the sandbox HOME: %s", out)
	}

	// As a session, the request is in the audit log; the upstream comes
	// from the configuration this time (STOCKADE_UPSTREAM) rather than a flag.
	r = e.run("", []string{"ANTHROPIC_API_KEY=" + realKey, "PATH=" + wrap + ":/usr/local/bin:/usr/bin:/bin", "STOCKADE_UPSTREAM=anthropic=" + fakeProvider},
		"claude", "-d", "--ro", pkg, "--", "-p", "Say something.")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("stockade claude -d: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if !waitFor(func() bool { return e.session(id).Effective == "exited" }) {
		t.Fatalf("the claude session did not end: %+v", e.session(id))
	}
	logs := e.run("", nil, "logs", "-s", id).stdout
	if !strings.Contains(logs, "authproxy: auth proxy anthropic: POST /v1/messages") && !strings.Contains(logs, "auth proxy anthropic: POST") {
		t.Errorf("the audit log lacks the provider request:\n%s", logs)
	}
	if strings.Contains(logs, realKey) {
		t.Error("the real key is in the audit log")
	}
}
