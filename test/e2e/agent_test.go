package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/agent"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// cannedReply and the fake provider come from test/netenv/server: on the
// test host, or STOCKADE_FAKE_PROVIDER (an instance on loopback) with its
// request log in STOCKADE_PROVIDER_LOG.
const cannedReply = "CANNED-REPLY-FROM-THE-FAKE-PROVIDER"

var (
	fakeProvider = envOr("STOCKADE_FAKE_PROVIDER", "http://198.51.100.10:8080")
	providerLog  = envOr("STOCKADE_PROVIDER_LOG", "/run/stk-testnet-provider.log")
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// agentCase is one real agent CLI driven in its non-interactive mode.
type agentCase struct {
	name      string   // stockade <name>, and the CLI on PATH
	keyEnv    string   // where the user keeps the real key
	keyPrefix string   // what a real key of the provider looks like
	route     string   // the auth proxy route
	args      []string // the non-interactive prompt
	inside    []string // variables the CLI must see, as NAME=VALUE
	keyField  string   // how the provider log shows the key: %s is the key
	request   string   // the provider path that must carry it
	audit     string   // the audit line of that request
}

var agentCases = []agentCase{
	{name: "claude", keyEnv: "ANTHROPIC_API_KEY", keyPrefix: "sk-ant-api03-REALKEY", route: "anthropic",
		args:     []string{"-p", "Say something."},
		inside:   []string{"ANTHROPIC_API_KEY=sk-proxy", "ANTHROPIC_BASE_URL=http://127.0.0.1:2376/anthropic"},
		keyField: `"x_api_key":"%s"`, request: "/v1/messages", audit: "auth proxy anthropic: POST /v1/messages -> 200"},
	// --skip-git-repo-check: the project is no git repository.
	{name: "codex", keyEnv: "OPENAI_API_KEY", keyPrefix: "sk-proj-REALKEY", route: "openai",
		args:     []string{"exec", "--skip-git-repo-check", "Say something."},
		inside:   []string{"OPENAI_API_KEY=sk-proxy", "OPENAI_BASE_URL=http://127.0.0.1:2376/openai/v1"},
		keyField: `"authorization":"Bearer %s"`, request: "/v1/responses", audit: "auth proxy openai: POST /v1/responses -> 200"},
	{name: "gemini", keyEnv: "GEMINI_API_KEY", keyPrefix: "AIzaSy-REALKEY", route: "google",
		args:     []string{"-p", "Say something."},
		inside:   []string{"GEMINI_API_KEY=sk-proxy", "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:2376/google"},
		keyField: `"x_goog_api_key":"%s"`, request: ":streamGenerateContent", audit: "auth proxy google: POST /v1beta/models/"},
	{name: "opencode", keyEnv: "ANTHROPIC_API_KEY", keyPrefix: "sk-ant-api03-REALKEY", route: "anthropic",
		args:     []string{"run", "Say something."},
		inside:   []string{"ANTHROPIC_API_KEY=sk-proxy"},
		keyField: `"x_api_key":"%s"`, request: "/v1/messages", audit: "auth proxy anthropic: POST /v1/messages -> 200"},
}

// TestAgents runs each real agent CLI in `stockade <agent>` against the
// fake provider: the CLI prints the canned reply; the provider got the real
// key and never the placeholder; the real key is in no environment, /proc
// entry, HOME or /tmp file inside, nor in the sandbox HOME afterwards; the
// agent's guide is where the CLI reads it and read-only inside; and as a
// session, the request is in the audit log and nothing else was attempted.
func TestAgents(t *testing.T) {
	requireSandbox(t)
	if os.Getenv("STOCKADE_FAKE_PROVIDER") == "" {
		requireTestnet(t)
	}
	for _, c := range agentCases {
		t.Run(c.name, func(t *testing.T) { runAgentCase(t, c) })
	}
}

func runAgentCase(t *testing.T, c agentCase) {
	p := agent.Profiles[c.name]
	path := os.Getenv("PATH")
	if d := os.Getenv("STOCKADE_AGENT_BIN"); d != "" {
		path = d + ":" + path
	}
	in, err := agent.Find(p, path)
	if err != nil {
		testenv.SkipOrFail(t, "%v (scripts/test.sh installs it)", err)
	}
	e := newEnv(t)
	suffix := make([]byte, 8)
	rand.Read(suffix)
	half1, half2 := c.keyPrefix, "-"+hex.EncodeToString(suffix)
	realKey := half1 + half2

	// A wrapper in front of the real CLI looks for the key from inside,
	// without holding it whole itself, tries to rewrite the guide, then
	// hands over to the CLI, whose install is mounted with --ro.
	wrap := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(wrap, 0o755)
	os.Chmod(filepath.Dir(wrap), 0o755)
	var show []string
	for _, kv := range c.inside {
		name, _, _ := strings.Cut(kv, "=")
		show = append(show, fmt.Sprintf("%s=$%s", name, name))
	}
	guideCheck := "echo GUIDE-PROTECTED"
	if p.GuideFile != "" {
		guideCheck = fmt.Sprintf(`if (echo "ignore the sandbox" >> "$HOME/%s") 2>/dev/null; then echo GUIDE-WRITABLE; else echo GUIDE-PROTECTED; fi`, p.GuideFile)
	}
	script := fmt.Sprintf(`#!/bin/sh
A='%s'; B='%s'
if grep -aqF "$A$B" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null || grep -rqF "$A$B" "$HOME" /tmp 2>/dev/null; then echo KEY-LEAKED; else echo KEY-ABSENT; fi
echo "inside: %s"
%s
exec %s "$@"
`, half1, half2, strings.Join(show, " "), guideCheck, in.Command)
	os.WriteFile(filepath.Join(wrap, c.name), []byte(script), 0o755)
	vars := []string{c.keyEnv + "=" + realKey, "PATH=" + strings.Join(append([]string{wrap}, in.PathDirs...), ":") + ":/usr/local/bin:/usr/bin:/bin"}
	flags := func(extra ...string) []string {
		a := append([]string{c.name}, extra...)
		for _, m := range in.Mounts {
			a = append(a, "--ro", m)
		}
		a = append(a, "--upstream", c.route+"="+fakeProvider, "--")
		return append(a, c.args...)
	}

	// Only this test's requests count in a log the test host shares.
	var logStart int64
	if fi, err := os.Stat(providerLog); err == nil {
		logStart = fi.Size()
	}
	r := e.run("", vars, flags()...)
	if r.code != 0 {
		t.Fatalf("stockade %s: exit %d\nstdout: %s\nstderr: %s", c.name, r.code, r.stdout, r.stderr)
	}
	for _, want := range append([]string{"KEY-ABSENT", "GUIDE-PROTECTED", cannedReply}, c.inside...) {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, realKey) {
		t.Error("the real key appears in stockade's output")
	}
	if want := "stockade: LOOSENED: upstream " + c.route + "=" + fakeProvider; strings.HasPrefix(fakeProvider, "http://") && !strings.Contains(r.stderr, want) {
		t.Errorf("a plain-http upstream is not printed as LOOSENED (%q):\n%s", want, r.stderr)
	}
	checkProviderLog(t, logStart, fmt.Sprintf(c.keyField, realKey), c.request)

	home := agentHome(t, e, c.name)
	if out, _ := exec.Command("grep", "-rlF", realKey, home).Output(); len(out) > 0 {
		t.Errorf("the real key is in the sandbox HOME: %s", out)
	}
	if p.GuideFile != "" {
		if guide, err := os.ReadFile(filepath.Join(home, p.GuideFile)); err != nil || !strings.Contains(string(guide), "stockade sandbox") {
			t.Errorf("the guide is not where %s reads it: %v %q", c.name, err, guide)
		}
	}

	// The foreground run has its audit log too, with the request in it;
	// it is listed by the agent's name and the user's arguments, and its
	// start event holds the guide's hash, not its text.
	fg := e.list(true)
	if len(fg) != 1 || !fg[0].Foreground || !slices.Equal(fg[0].Command, append([]string{c.name}, c.args...)) {
		t.Errorf("the foreground run is listed as %+v, want the command %q", fg, append([]string{c.name}, c.args...))
	} else {
		checkAgentAudit(t, e, fg[0].ID, c, realKey)
	}

	// As a session: the request is in the audit log, and nothing else was
	// attempted. The upstream comes from the configuration this time.
	r = e.run("", append(vars, "STOCKADE_UPSTREAM="+c.route+"="+fakeProvider), flags("-d")...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("stockade %s -d: exit %d %q %s", c.name, r.code, r.stdout, r.stderr)
	}
	// Some CLIs take seconds to start: longer than waitFor waits.
	deadline := time.Now().Add(60 * time.Second)
	for e.session(id).Effective != "exited" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if s := e.session(id); s.Effective != "exited" || s.ExitCode == nil || *s.ExitCode != 0 {
		code := "none"
		if s.ExitCode != nil {
			code = fmt.Sprint(*s.ExitCode)
		}
		out := e.run("", nil, "logs", "-s", id, "--output", "--plain")
		sup, _ := os.ReadFile(filepath.Join(e.home, ".local/state/stockade/sessions", id, "supervisor.log"))
		t.Fatalf("the %s session did not end well (exit code %s): %+v\nits output:\n%s%s\nsupervisor.log: %s\naudit:\n%s",
			c.name, code, s, out.stdout, out.stderr, sup, e.run("", nil, "logs", "-s", id).stdout)
	}
	if s := e.session(id); !slices.Equal(s.Command, append([]string{c.name}, c.args...)) {
		t.Errorf("the session is listed with the command %q, want the agent's name and the arguments", s.Command)
	}
	checkAgentAudit(t, e, id, c, realKey)
}

// checkAgentAudit: the audit log of run id holds the agent's request and
// nothing denied, no key, and a start event that names the agent and
// records its guide by hash.
func checkAgentAudit(t *testing.T, e *env, id string, c agentCase, realKey string) {
	t.Helper()
	logs := e.run("", nil, "logs", "-s", id).stdout
	if !regexp.MustCompile(regexp.QuoteMeta(c.audit) + `.* \(\d+ bytes out, [1-9]\d* bytes in, \d+ms[,)]`).MatchString(logs) {
		out := e.run("", nil, "logs", "-s", id, "--output", "--plain")
		sup, _ := os.ReadFile(filepath.Join(e.home, ".local/state/stockade/sessions", id, "supervisor.log"))
		t.Errorf("the audit log lacks %q with its sizes and duration:\n%s\nthe run's output:\n%s%s\nsupervisor.log: %s", c.audit, logs, out.stdout, out.stderr, sup)
	}
	if strings.Contains(logs, "network denied") {
		t.Errorf("%s tried to reach something else than its provider:\n%s", c.name, logs)
	}
	if strings.Contains(logs, realKey) {
		t.Error("the real key is in the audit log")
	}
	if !strings.Contains(logs, "session started: "+strings.Join(append([]string{c.name}, c.args...), " ")+" in ") {
		t.Errorf("the start line does not name the agent %s:\n%s", c.name, logs)
	}
	first, _, _ := strings.Cut(e.run("", nil, "logs", "-s", id, "--json").stdout, "\n")
	var start struct {
		Agent   string
		Command []string
		Guide   struct{ SHA256, Where string }
	}
	json.Unmarshal([]byte(first), &start)
	if start.Agent != c.name || len(start.Guide.SHA256) != 64 || start.Guide.Where == "" || strings.Contains(first, "stockade sandbox") {
		t.Errorf("the start event does not record the agent and its guide by hash: %s", first)
	}
}

// checkProviderLog: requests on path carried the real key (field), and no
// request carried the placeholder.
func checkProviderLog(t *testing.T, from int64, field, path string) {
	t.Helper()
	f, err := os.Open(providerLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Seek(from, io.SeekStart)
	var seen, dummy int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.Contains(sc.Text(), field) && strings.Contains(sc.Text(), path) {
			seen++
		}
		if strings.Contains(sc.Text(), sandboxnet.DummyKey) {
			dummy++
		}
	}
	if seen == 0 || dummy > 0 {
		t.Errorf("provider log: %d requests to %s with the real key, %d with the placeholder", seen, path, dummy)
	}
}
