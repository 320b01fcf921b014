package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// fakeGitHub is a GitHub API on the host's loopback that records the
// Authorization of each request.
type fakeGitHub struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD PATH AUTHORIZATION"
}

func startFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Oauth-Scopes", "repo")
		if r.URL.Path == "/graphql" {
			fmt.Fprint(w, `{"data":{"viewer":{"login":"octo-graphql"}}}`)
			return
		}
		fmt.Fprintf(w, `{"login":"octo-rest","path":%q}`, r.URL.Path)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeGitHub) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// TestGitHubCLI: with --gh, gh inside the sandbox (over the socket its
// config names) and curl (over GITHUB_API_URL) reach the GitHub API with the
// user's token, which the auth proxy puts in; the sandbox holds only the
// placeholder, and the audit log holds each request.
func TestGitHubCLI(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("gh"); err != nil {
		testenv.SkipOrFail(t, "gh is missing (Debian: gh)")
	}
	api := startFakeGitHub(t)
	const token = "ghp_REALTOKEN0123456789abcdef"
	e := newEnv(t)
	e.write(e.home+"/.config/stockade/config.json", fmt.Sprintf(`{"upstream": ["github=%s"]}`, api.URL))
	script := `gh api user --jq .login
gh api graphql -f query='{viewer{login}}' --jq .data.viewer.login
curl -sf -H "Authorization: Bearer $GH_TOKEN" "$GITHUB_API_URL/repos/o/r" && echo
echo "GH_TOKEN=$GH_TOKEN GITHUB_TOKEN=$GITHUB_TOKEN"
t=` + token[:8] + `; grep -rl "${t}` + token[8:] + `" /proc/self/environ /run/stockade "$HOME" 2>/dev/null || echo NO-TOKEN-INSIDE
`
	// The script holds the token cut in two: the start event records it.
	r := e.run("", []string{"GH_TOKEN=" + token}, "run", "--gh", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run --gh: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"octo-rest\n", "octo-graphql\n", `"path":"/repos/o/r"`, "GH_TOKEN=sk-proxy GITHUB_TOKEN=sk-proxy\n", "NO-TOKEN-INSIDE\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inside: want %q in:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout, token) {
		t.Errorf("the real token reached the sandbox:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "stockade: LOOSENED: gh: the sandbox can call the GitHub API as you") {
		t.Errorf("no LOOSENED line for --gh:\n%s", r.stderr)
	}
	seen := api.requests()
	for _, want := range []string{"GET /user token " + token, "POST /graphql token " + token, "GET /repos/o/r token " + token} {
		found := false
		for _, s := range seen {
			found = found || s == want
		}
		if !found {
			t.Errorf("the API did not get %q; it got %q", want, seen)
		}
	}
	for _, s := range seen {
		if strings.Contains(s, "sk-proxy") {
			t.Errorf("the placeholder reached the API: %q", s)
		}
	}
	all := e.list(true)
	if len(all) != 1 {
		t.Fatalf("list --all: %+v", all)
	}
	logs := e.run("", nil, "logs", "-s", all[0].ID).stdout
	for _, want := range []string{"auth proxy github: GET /user -> 200", "auth proxy github: POST /graphql -> 200", "gh: the sandbox can call the GitHub API as you"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, token) {
		t.Errorf("the real token is in the audit log:\n%s", logs)
	}
}

// TestGitHubBadInput: --gh without a token, or without the proxies, stops
// the start with one line (exit 125) before anything is made.
func TestGitHubBadInput(t *testing.T) {
	requireSandbox(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no token", nil, []string{"--gh"}, "--gh: no GitHub token: set GH_TOKEN"},
		{"short token", []string{"GH_TOKEN=abc"}, []string{"--gh"}, "--gh: configuring auth proxy route github"},
		{"no network", []string{"GH_TOKEN=ghp_0123456789abcdef"}, []string{"--gh", "--network", "none"}, "--gh needs network mode proxy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.run("", c.env, append(append([]string{"run"}, c.args...), "--", "sh", "-c", "echo RAN")...)
			lines := stderrLines(r.stderr)
			if r.code != 125 || strings.Contains(r.stdout, "RAN") || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d, stdout %q, stderr lines %q (want one with %q)", r.code, r.stdout, lines, c.want)
			}
		})
	}
}

// TestCredentialsInSession: a background session's supervisor serves --ssh
// and --gh as a foreground run does (the job carries them to it), and
// removes their host directories when it ends.
func TestCredentialsInSession(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("gh"); err != nil {
		testenv.SkipOrFail(t, "gh is missing (Debian: gh)")
	}
	up := testenv.StartSSHAgent(t)
	api := startFakeGitHub(t)
	const token = "ghp_SESSIONTOKEN0123456789"
	e := newEnv(t)
	e.write(e.home+"/.config/stockade/config.json", fmt.Sprintf(`{"upstream": ["github=%s"]}`, api.URL))
	tmp := t.TempDir() // the supervisor's TMPDIR: where its socket directories go
	r := e.run("", []string{"SSH_AUTH_SOCK=" + up.Sock, "GH_TOKEN=" + token, "TMPDIR=" + tmp},
		"run", "-d", "--ssh", "--gh", "--", "sh", "-c", "ssh-add -l; gh api user --jq .login")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("run -d: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if s := e.waitEnded(id); s.Effective != "exited" || s.ExitCode == nil || *s.ExitCode != 0 {
		out := e.run("", nil, "logs", "-s", id, "--output", "--plain")
		t.Fatalf("the session ended as %+v\n%s%s", s, out.stdout, out.stderr)
	}
	out := e.run("", nil, "logs", "-s", id, "--output", "--plain").stdout
	if !strings.Contains(out, up.Fingerprint) || !strings.Contains(out, "octo-rest") {
		t.Errorf("the session's output lacks the key or gh's answer:\n%s", out)
	}
	if seen := api.requests(); len(seen) != 1 || seen[0] != "GET /user token "+token {
		t.Errorf("the API got %q", seen)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "stockade-*"))
	if len(left) != 0 {
		t.Errorf("the session left its socket directories: %v", left)
	}
}
