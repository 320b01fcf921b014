package authproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startSocketProxy is startProxy with the github route also served on a
// unix socket, routed by Host.
func startSocketProxy(t *testing.T) (*testProxy, *upstream, string) {
	t.Helper()
	up := startUpstream(t, nil)
	p := startProxy(t, allRoutes(t, up), func(c *Config) { c.HostRoutes = map[string]string{GitHubHost: "github"} })
	sock := filepath.Join(t.TempDir(), "http.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln) // ends with the proxy's Close
	return p, up, sock
}

func rawUnix(t *testing.T, sock, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", request, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestSocketByHost: what gh sends over its http_unix_socket (origin-form,
// Host api.github.com, "Authorization: token sk-proxy") goes to the github
// route's upstream with the real token; nothing else does.
func TestSocketByHost(t *testing.T) {
	p, up, sock := startSocketProxy(t)
	get := func(path, host, auth string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + auth + "\r\n"
	}
	for _, c := range []struct {
		name, request string
		status        int
		upstreamPath  string // "" when nothing may reach the upstream
		body          string
	}{
		{"gh's token", get("/user?per_page=1", "api.github.com", "Authorization: token sk-proxy\r\n"), 200, "/user", "ok"},
		{"a bearer", get("/repos/o/r/pulls", "API.GitHub.com", "Authorization: Bearer sk-proxy\r\n"), 200, "/repos/o/r/pulls", "ok"},
		{"graphql", "POST /graphql HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token sk-proxy\r\nContent-Length: 2\r\n\r\n{}", 200, "/graphql", "ok"},
		{"no key", get("/user", "api.github.com", ""), 401, "", "no key"},
		{"the real token", get("/user", "api.github.com", "Authorization: token "+keyOf("github")+"\r\n"), 401, "", "leaked into the sandbox"},
		{"another host", get("/anthropic/v1/models", "api.anthropic.com", "X-Api-Key: sk-proxy\r\n"), 421, "", "serves only api.github.com"},
		{"the TCP form", get("/github/user", "127.0.0.1:2376", "Authorization: token sk-proxy\r\n"), 421, "", "foreign Host"},
		{"dot segments", get("/../user", "api.github.com", "Authorization: token sk-proxy\r\n"), 400, "", "dot segment"},
		{"absolute-form", "GET https://api.github.com/user HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token sk-proxy\r\n\r\n", 405, "", "absolute-form"},
		// Host tricks: each is another name than the one route's, or none.
		{"Host with a port", get("/user", "api.github.com:443", "Authorization: token sk-proxy\r\n"), 421, "", "foreign Host"},
		{"Host with a dot", get("/user", "api.github.com.", "Authorization: token sk-proxy\r\n"), 421, "", "foreign Host"},
		{"Host with userinfo", get("/user", "evil.example@api.github.com", "Authorization: token sk-proxy\r\n"), 400, "", ""},
		{"two Hosts", get("/user", "api.github.com\r\nHost: evil.example", "Authorization: token sk-proxy\r\n"), 400, "", ""},
		{"HTTP/1.0 without Host", "GET /user HTTP/1.0\r\nAuthorization: token sk-proxy\r\n\r\n", 421, "", "foreign Host"},
		{"CONNECT", "CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\nAuthorization: token sk-proxy\r\n\r\n", 405, "", "not an HTTP proxy"},
		{"asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: token sk-proxy\r\n\r\n", 405, "", "absolute-form"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := up.count()
			resp, body := rawUnix(t, sock, c.request)
			if resp.StatusCode != c.status || !strings.Contains(body, c.body) {
				t.Fatalf("got %d %q, want %d and %q", resp.StatusCode, body, c.status, c.body)
			}
			if c.upstreamPath == "" {
				if up.count() != before {
					t.Fatal("a refused request reached the upstream")
				}
				return
			}
			got := up.last(t)
			if got.Path != c.upstreamPath || got.Header.Get("Authorization") != "token "+keyOf("github") {
				t.Errorf("upstream saw %s with Authorization %q", got.Path, got.Header.Get("Authorization"))
			}
		})
	}
	// On TCP the Host check stands: api.github.com is a foreign Host there.
	resp, _ := raw(t, p.addr, get("/github/user", "api.github.com", "Authorization: token sk-proxy\r\n"))
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host api.github.com on TCP: %d, want 421", resp.StatusCode)
	}
	// The route form on TCP is served, with the token outside.
	resp, _ = raw(t, p.addr, get("/github/user", p.addr, "Authorization: token sk-proxy\r\n"))
	if resp.StatusCode != 200 || up.last(t).Header.Get("Authorization") != "token "+keyOf("github") {
		t.Errorf("/github/user on TCP: %d", resp.StatusCode)
	}
}

func TestHostRoutesChecked(t *testing.T) {
	up := startUpstream(t, nil)
	routes := allRoutes(t, up)
	delete(routes, "github")
	for _, hr := range []map[string]string{{GitHubHost: "github"}, {"API.github.com": "openai"}} {
		if _, err := New(Config{Routes: routes, HostRoutes: hr, AllowHTTP: map[string]bool{"openai": true}}); err == nil {
			t.Errorf("New accepted HostRoutes %v", hr)
		}
	}
}
