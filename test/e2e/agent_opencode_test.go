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
	"time"
)

// opencodeProvider is the upstream of the anthropic route in
// TestAgentOpencode: the fake provider on the test host, or
// STOCKADE_FAKE_PROVIDER (e.g. an instance of test/netenv/server on
// loopback) with its log in STOCKADE_PROVIDER_LOG.
var (
	opencodeProvider    = opencodeEnvOr("STOCKADE_FAKE_PROVIDER", fakeProvider)
	opencodeProviderLog = opencodeEnvOr("STOCKADE_PROVIDER_LOG", providerLog)
)

func opencodeEnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// requireOpencode finds the real OpenCode CLI (its bin/opencode.exe, the
// native binary its postinstall put there, symlinks resolved):
// $STOCKADE_AGENT_BIN (a directory) or the PATH. CI installs a pinned
// version with npm.
func requireOpencode(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PATH")
	if d := os.Getenv("STOCKADE_AGENT_BIN"); d != "" {
		path = d + ":" + path
	}
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, "opencode"); isExec(p) {
			real, err := filepath.EvalSymlinks(p)
			if err == nil {
				return real
			}
		}
	}
	if os.Getenv("STOCKADE_MUST_WORK") == "1" {
		t.Fatal("OpenCode is not installed (npm install -g opencode-ai); scripts/test.sh installs it")
	}
	t.Skip("OpenCode is not installed")
	return ""
}

// TestAgentOpencode runs the real OpenCode in `stockade opencode -- run`
// against the fake provider (the Anthropic Messages API): the CLI prints
// the canned reply, the provider got the real key and never the
// placeholder, the real key is nowhere inside the sandbox, the guide is
// where OpenCode reads global instructions, and a session's audit log has
// the request.
func TestAgentOpencode(t *testing.T) {
	requireSandbox(t)
	if os.Getenv("STOCKADE_FAKE_PROVIDER") == "" {
		requireTestnet(t)
	}
	opencode := requireOpencode(t)
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
echo "inside: ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY"
exec %s "$@"
`, half1, half2, opencode)
	os.WriteFile(filepath.Join(wrap, "opencode"), []byte(script), 0o755)

	// Only the requests of this test count in a log the test host shares.
	var logStart int64
	if fi, err := os.Stat(opencodeProviderLog); err == nil {
		logStart = fi.Size()
	}

	home := filepath.Join(e.home, ".local/share/stockade/home/opencode")

	pkg := filepath.Dir(filepath.Dir(opencode)) // the npm package of the CLI, its native binary inside
	vars := []string{"ANTHROPIC_API_KEY=" + realKey, "PATH=" + wrap + ":/usr/local/bin:/usr/bin:/bin"}
	args := []string{"opencode", "--ro", pkg, "--upstream", "anthropic=" + opencodeProvider}
	r := e.run("", vars, append(args, "--", "run", "Say something.")...)
	if r.code != 0 {
		t.Fatalf("stockade opencode: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"KEY-ABSENT", "ANTHROPIC_API_KEY=sk-proxy", cannedReply} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, realKey) {
		t.Error("the real key appears in stockade's output")
	}

	// The provider saw the real key, and never the placeholder.
	f, err := os.Open(opencodeProviderLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Seek(logStart, io.SeekStart)
	var seen, dummy int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.Contains(sc.Text(), `"x_api_key":"`+realKey+`"`) && strings.Contains(sc.Text(), `"path":"/v1/messages"`) {
			seen++
		}
		if strings.Contains(sc.Text(), "sk-proxy") {
			dummy++
		}
	}
	if seen == 0 || dummy > 0 {
		t.Errorf("provider log: %d Messages requests with the real key, %d with the placeholder", seen, dummy)
	}

	// Nothing the CLI left in its sandbox HOME holds the key; the guide is
	// where OpenCode reads global instructions.
	if out, _ := exec.Command("grep", "-rlF", realKey, home).Output(); len(out) > 0 {
		t.Errorf("the real key is in the sandbox HOME: %s", out)
	}
	if guide, err := os.ReadFile(filepath.Join(home, ".config/opencode/AGENTS.md")); err != nil || !strings.Contains(string(guide), "stockade sandbox") {
		t.Errorf("the sandbox guide is not where OpenCode reads it: %v %q", err, guide)
	}

	// As a session, the request is in the audit log, and nothing else
	// left: the profile turns off what OpenCode fetches at start.
	args = []string{"opencode", "-d", "--ro", pkg, "--upstream", "anthropic=" + opencodeProvider}
	r = e.run("", vars, append(args, "--", "run", "Say something.")...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("stockade opencode -d: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	// OpenCode takes a few seconds to start, longer than waitFor waits.
	exited := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !exited; time.Sleep(100 * time.Millisecond) {
		exited = e.session(id).Effective == "exited"
	}
	if !exited {
		t.Fatalf("the opencode session did not end: %+v", e.session(id))
	}
	logs := e.run("", nil, "logs", "-s", id).stdout
	if !strings.Contains(logs, "auth proxy anthropic: POST /v1/messages -> 200") {
		t.Errorf("the audit log lacks the provider request:\n%s", logs)
	}
	if strings.Contains(logs, "network denied") {
		t.Errorf("OpenCode tried to reach something else than its provider:\n%s", logs)
	}
	if strings.Contains(logs, realKey) {
		t.Error("the real key is in the audit log")
	}
	if s := e.session(id); s.ExitCode == nil || *s.ExitCode != 0 {
		t.Errorf("the opencode session failed: %+v\n%s", s, logs)
	}
}
