package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// codexProvider is the upstream of the openai route in TestAgentCodex: the
// fake provider on the test host, or STOCKADE_FAKE_PROVIDER (e.g. an
// instance of test/netenv/server on loopback) with its log in
// STOCKADE_PROVIDER_LOG.
var (
	codexProvider    = codexEnvOr("STOCKADE_FAKE_PROVIDER", fakeProvider)
	codexProviderLog = codexEnvOr("STOCKADE_PROVIDER_LOG", providerLog)
)

func codexEnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// requireCodex finds the real OpenAI Codex CLI (its bin/codex.js, symlinks
// resolved): $STOCKADE_AGENT_BIN (a directory) or the PATH. CI installs a
// pinned version with npm.
func requireCodex(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PATH")
	if d := os.Getenv("STOCKADE_AGENT_BIN"); d != "" {
		path = d + ":" + path
	}
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, "codex"); isExec(p) {
			real, err := filepath.EvalSymlinks(p)
			if err == nil {
				return real
			}
		}
	}
	if os.Getenv("STOCKADE_MUST_WORK") == "1" {
		t.Fatal("the Codex CLI is not installed (npm install -g @openai/codex); scripts/test.sh installs it")
	}
	t.Skip("the Codex CLI is not installed")
	return ""
}

// TestAgentCodex runs the real Codex CLI in `stockade codex -- exec`
// against the fake provider (the OpenAI Responses API): the CLI prints the
// canned reply, the provider got the real key as a bearer token and never
// the placeholder, the real key is nowhere inside the sandbox, the guide
// reached the CLI, and a session's audit log has the request and no other
// connection.
func TestAgentCodex(t *testing.T) {
	requireSandbox(t)
	if os.Getenv("STOCKADE_FAKE_PROVIDER") == "" {
		requireTestnet(t)
	}
	codex := requireCodex(t)
	e := newEnv(t)
	suffix := make([]byte, 8)
	rand.Read(suffix)
	half1, half2 := "sk-proj-REALKEY", "-"+hex.EncodeToString(suffix)
	realKey := half1 + half2

	// A wrapper in front of the real CLI looks for the key from inside,
	// without holding it whole itself, then hands over to the CLI.
	wrap := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(wrap, 0o755)
	os.Chmod(filepath.Dir(wrap), 0o755)
	script := fmt.Sprintf(`#!/bin/sh
A='%s'; B='%s'
if grep -aqF "$A$B" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null || grep -rqF "$A$B" "$HOME" /tmp 2>/dev/null; then echo KEY-LEAKED; else echo KEY-ABSENT; fi
echo "inside: OPENAI_API_KEY=$OPENAI_API_KEY OPENAI_BASE_URL=$OPENAI_BASE_URL"
exec %s "$@"
`, half1, half2, codex)
	os.WriteFile(filepath.Join(wrap, "codex"), []byte(script), 0o755)

	// Only the requests of this test count in a log the test host shares.
	var logStart int64
	if fi, err := os.Stat(codexProviderLog); err == nil {
		logStart = fi.Size()
	}

	pkg := filepath.Dir(filepath.Dir(codex)) // the npm package of the CLI, its native binary inside
	vars := []string{"OPENAI_API_KEY=" + realKey, "PATH=" + wrap + ":/usr/local/bin:/usr/bin:/bin"}
	// --skip-git-repo-check: the project is no git repository.
	r := e.run("", vars, "codex", "--ro", pkg, "--upstream", "openai="+codexProvider,
		"--", "exec", "--skip-git-repo-check", "Say something.")
	if r.code != 0 {
		t.Fatalf("stockade codex: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"KEY-ABSENT", "OPENAI_API_KEY=sk-proxy", "OPENAI_BASE_URL=http://127.0.0.1:2376/openai/v1", cannedReply} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, realKey) {
		t.Error("the real key appears in stockade's output")
	}

	// The provider saw the real key as a bearer token, and never the
	// placeholder.
	f, err := os.Open(codexProviderLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Seek(logStart, io.SeekStart)
	var seen, dummy int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.Contains(sc.Text(), `"authorization":"Bearer `+realKey+`"`) && strings.Contains(sc.Text(), `"path":"/v1/responses"`) {
			seen++
		}
		if strings.Contains(sc.Text(), "sk-proxy") {
			dummy++
		}
	}
	if seen == 0 || dummy > 0 {
		t.Errorf("provider log: %d Responses requests with the real key, %d with the placeholder", seen, dummy)
	}

	// Nothing the CLI left in its sandbox HOME holds the key; the guide is
	// where Codex reads global instructions, and Codex read it.
	home := filepath.Join(e.home, ".local/share/stockade/home/codex")
	if out, _ := exec.Command("grep", "-rlF", realKey, home).Output(); len(out) > 0 {
		t.Errorf("the real key is in the sandbox HOME: %s", out)
	}
	guide, err := os.ReadFile(filepath.Join(home, ".codex/AGENTS.md"))
	if err != nil {
		t.Fatalf("the sandbox guide: %v", err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(guide)), "\n")
	if out, _ := exec.Command("grep", "-rlF", "--", line, filepath.Join(home, ".codex/sessions")).Output(); len(out) == 0 {
		t.Errorf("the session Codex recorded lacks the guide's first line %q", line)
	}

	// As a session, the request is in the audit log, and nothing else
	// left: the profile turns off what Codex fetches at start.
	r = e.run("", vars, "codex", "-d", "--ro", pkg, "--upstream", "openai="+codexProvider,
		"--", "exec", "--skip-git-repo-check", "Say something.")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("stockade codex -d: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if !waitFor(func() bool { return e.session(id).Effective == "exited" }) {
		t.Fatalf("the codex session did not end: %+v", e.session(id))
	}
	logs := e.run("", nil, "logs", "-s", id).stdout
	if !strings.Contains(logs, "auth proxy openai: POST /v1/responses -> 200") {
		t.Errorf("the audit log lacks the provider request:\n%s", logs)
	}
	if strings.Contains(logs, "network denied") {
		t.Errorf("Codex tried to reach something else than its provider:\n%s", logs)
	}
	if strings.Contains(logs, realKey) {
		t.Error("the real key is in the audit log")
	}
}
