package authproxy

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestKeySwap(t *testing.T) {
	up := startUpstream(t, nil)
	routes := allRoutes(t, up)
	oauth := routes["anthropic"]
	oauth.Style = Bearer // as RoutesFromEnv makes it from CLAUDE_CODE_OAUTH_TOKEN
	p := startProxy(t, routes, nil)
	po := startProxy(t, map[string]Route{"anthropic": oauth}, nil)
	noise := hdr("X-Forwarded-For", "10.0.0.1", "Forwarded", "for=1.2.3.4", "Proxy-Authorization", "Basic eA==",
		"X-Real-Ip", "1.2.3.4", "Anthropic-Version", "2023-06-01")
	tests := []struct {
		name     string
		proxy    *testProxy
		target   string // after the base URL
		h        http.Header
		header   string // where the upstream must see the real key
		value    string // the whole value it must see
		path     string
		query    string
		notKeyIn []string // headers that must be absent upstream
	}{
		{"anthropic x-api-key", p, "/anthropic/v1/messages", hdr("X-Api-Key", "sk-proxy"),
			"X-Api-Key", keyOf("anthropic"), "/v1/messages", "", []string{"Authorization"}},
		{"anthropic bearer dummy, API key", p, "/anthropic/v1/messages", hdr("Authorization", "Bearer sk-proxy"),
			"X-Api-Key", keyOf("anthropic"), "/v1/messages", "", []string{"Authorization"}},
		{"anthropic OAuth bearer", po, "/anthropic/v1/messages?beta=true", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("anthropic"), "/v1/messages", "beta=true", []string{"X-Api-Key"}},
		{"anthropic OAuth, x-api-key dummy", po, "/anthropic/v1/messages", hdr("X-Api-Key", "sk-proxy"),
			"Authorization", "Bearer " + keyOf("anthropic"), "/v1/messages", "", []string{"X-Api-Key"}},
		{"openai", p, "/openai/v1/chat/completions", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("openai"), "/v1/chat/completions", "", []string{"X-Api-Key"}},
		{"openai bearer lower case", p, "/openai/v1/responses", hdr("Authorization", "bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("openai"), "/v1/responses", "", nil},
		{"openrouter base path", p, "/openrouter/v1/chat/completions", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("openrouter"), "/api/v1/chat/completions", "", nil},
		{"groq base path", p, "/groq/v1/models", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("groq"), "/openai/v1/models", "", nil},
		{"deepseek", p, "/deepseek/chat/completions", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("deepseek"), "/chat/completions", "", nil},
		{"mistral", p, "/mistral/v1/chat/completions", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("mistral"), "/v1/chat/completions", "", nil},
		{"xai", p, "/xai/v1/chat/completions", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("xai"), "/v1/chat/completions", "", nil},
		{"google header", p, "/google/v1beta/models/g:generateContent", hdr("X-Goog-Api-Key", "sk-proxy"),
			"X-Goog-Api-Key", keyOf("google"), "/v1beta/models/g:generateContent", "", []string{"Authorization"}},
		{"google query key", p, "/google/v1beta/models/g:streamGenerateContent?alt=sse&key=sk-proxy&x=%2F", http.Header{},
			"X-Goog-Api-Key", keyOf("google"), "/v1beta/models/g:streamGenerateContent", "alt=sse&x=%2F", nil},
		{"gemini alias, openai-compatible bearer", p, "/gemini/v1beta/openai/chat/completions", hdr("Authorization", "Bearer sk-proxy"),
			"X-Goog-Api-Key", keyOf("google"), "/v1beta/openai/chat/completions", "", []string{"Authorization"}},
		{"escaped path kept", p, "/openai/v1/files/a%2Fb", hdr("Authorization", "Bearer sk-proxy"),
			"Authorization", "Bearer " + keyOf("openai"), "/v1/files/a/b", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h.Clone()
			for k, v := range noise {
				h[k] = v
			}
			resp, _ := do(t, nil, "POST", tt.proxy.base+tt.target, h, `{}`)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := up.last(t)
			if v := got.Header.Values(tt.header); len(v) != 1 || v[0] != tt.value {
				t.Errorf("upstream saw %s: %q, want %q", tt.header, v, tt.value)
			}
			if got.Path != tt.path || got.Query != tt.query {
				t.Errorf("upstream saw path %q query %q, want %q %q", got.Path, got.Query, tt.path, tt.query)
			}
			if got.Host != up.Listener.Addr().String() {
				t.Errorf("upstream saw Host %q", got.Host)
			}
			for name, vals := range got.Header {
				if strings.Contains(strings.Join(vals, " "), "sk-proxy") {
					t.Errorf("upstream saw the dummy in %s", name)
				}
				if name != tt.header && strings.Contains(strings.Join(vals, " "), "K3Y") {
					t.Errorf("upstream saw a real key in %s too", name)
				}
			}
			for _, name := range append(tt.notKeyIn, "X-Forwarded-For", "Forwarded", "Proxy-Authorization", "X-Real-Ip") {
				if v := got.Header.Get(name); v != "" {
					t.Errorf("upstream saw %s: %q", name, v)
				}
			}
			if got.Header.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("an ordinary header was not forwarded")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	up := startUpstream(t, nil)
	p := startProxy(t, allRoutes(t, up), nil)
	get := func(path, headers string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: " + p.addr + "\r\n" + headers + "Connection: close\r\n\r\n"
	}
	port := p.addr[strings.LastIndex(p.addr, ":")+1:]
	tests := []struct {
		name    string
		request string
		status  int    // want; 200 rows prove the refusal rows are not refused for another reason
		reason  string // audit reason (substring)
		body    string // substring of the answer
	}{
		{"dummy in x-api-key", get("/anthropic/v1/models", "X-Api-Key: sk-proxy\r\n"), 200, "", ""},
		{"localhost Host", "GET /anthropic/v1/models HTTP/1.1\r\nHost: localhost:" + port + "\r\nX-Api-Key: sk-proxy\r\nConnection: close\r\n\r\n", 200, "", ""},
		{"no key", get("/anthropic/v1/models", ""), 401, "no key", `"sk-proxy" in x-api-key or Authorization: Bearer`},
		{"wrong key", get("/anthropic/v1/models", "X-Api-Key: sk-ant-found-somewhere\r\n"), 401, "wrong key in x-api-key", ""},
		{"real key of the route", get("/anthropic/v1/models", "X-Api-Key: "+keyOf("anthropic")+"\r\n"), 401, "leaked into the sandbox", ""},
		{"real key of another route", get("/openai/v1/models", "Authorization: Bearer "+keyOf("xai")+"\r\n"), 401, "(xai): it has leaked", ""},
		{"dummy plus another key", get("/openai/v1/models", "Authorization: Bearer sk-proxy\r\nX-Api-Key: other-key-123\r\n"), 401, "wrong key", ""},
		{"two bearers", get("/openai/v1/models", "Authorization: Bearer sk-proxy\r\nAuthorization: Bearer other\r\n"), 401, "wrong key", ""},
		{"basic auth", get("/openai/v1/models", "Authorization: Basic c2stcHJveHk6\r\n"), 401, "wrong key", ""},
		{"dummy in a header the route ignores", get("/anthropic/v1/models", "X-Goog-Api-Key: sk-proxy\r\n"), 401, "does not accept", ""},
		{"query key on google, wrong", get("/google/v1beta/models?key=AIza-other", ""), 401, "wrong key in ?key=", ""},
		{"query key off google is no key", get("/openai/v1/models?key=sk-proxy", ""), 401, "no key", ""},
		{"unknown route", get("/evil/v1/models", "X-Api-Key: sk-proxy\r\n"), 404, "unknown route", "anthropic, deepseek, github, google"},
		{"root", get("/", ""), 404, "unknown route", "/<route>/"},
		{"route without slash", get("/anthropic", "X-Api-Key: sk-proxy\r\n"), 404, "unknown route", ""},
		{"dot segments", get("/anthropic/../openai/v1/models", "X-Api-Key: sk-proxy\r\n"), 400, "dot segment", ""},
		{"encoded dot segments", get("/anthropic/%2e%2e/x", "X-Api-Key: sk-proxy\r\n"), 400, "dot segment", ""},
		{"foreign Host", "GET /anthropic/v1/models HTTP/1.1\r\nHost: rebind.example:" + port + "\r\nX-Api-Key: sk-proxy\r\n\r\n", 421, "foreign Host", ""},
		{"foreign port", "GET /anthropic/v1/models HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-Api-Key: sk-proxy\r\n\r\n", 421, "foreign Host", ""},
		{"CONNECT", "CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n", 405, "CONNECT", "not an HTTP proxy"},
		{"absolute-form", "GET http://api.anthropic.com/v1/models HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Api-Key: sk-proxy\r\n\r\n", 405, "absolute-form", ""},
		{"absolute-form to self", "GET http://" + p.addr + "/anthropic/v1/models HTTP/1.1\r\nHost: " + p.addr + "\r\nX-Api-Key: sk-proxy\r\n\r\n", 405, "absolute-form", ""},
		{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: " + p.addr + "\r\n\r\n", 405, "absolute-form", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, events := up.count(), len(p.audit.all())
			resp, body := raw(t, p.addr, tt.request)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.body) {
				t.Fatalf("got %d %q, want %d and %q", resp.StatusCode, body, tt.status, tt.body)
			}
			evs := p.audit.waitFor(t, events+1)[events:]
			if len(evs) != 1 {
				t.Fatalf("%d audit events, want 1", len(evs))
			}
			if tt.status == 200 {
				if evs[0].name != EventRequest || up.count() != before+1 {
					t.Errorf("event %v, upstream requests %d → %d", evs[0], before, up.count())
				}
				return
			}
			if up.count() != before {
				t.Errorf("a refused request reached the upstream")
			}
			reason, _ := evs[0].fields["reason"].(string)
			if evs[0].name != EventDenied || !strings.Contains(reason, tt.reason) {
				t.Errorf("audit %s %v, want %s with reason %q", evs[0].name, evs[0].fields, EventDenied, tt.reason)
			}
			if resp.Header.Get("X-Stockade-Denied") == "" {
				t.Errorf("no X-Stockade-Denied header")
			}
			for _, k := range []string{"K3Y", "sk-ant-found"} {
				if strings.Contains(body, k) || strings.Contains(reason, k) {
					t.Errorf("the answer or the audit event shows the key: %q, %q", body, reason)
				}
			}
		})
	}
}

func TestUpstreamDown(t *testing.T) {
	up := startUpstream(t, nil)
	routes := allRoutes(t, up)
	up.Close()
	p := startProxy(t, routes, nil)
	resp, body := do(t, nil, "GET", p.base+"/openai/v1/models", hdr("Authorization", "Bearer sk-proxy"), "")
	if resp.StatusCode != 502 || !strings.Contains(body, "did not answer") || strings.Contains(body, "K3Y") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	evs := p.audit.waitFor(t, 1)
	if len(evs) != 1 || evs[0].fields["status"] != 502 || evs[0].fields["error"] == nil {
		t.Errorf("audit %v", evs)
	}
	if s, _ := evs[0].fields["error"].(string); strings.Contains(s, "K3Y") {
		t.Errorf("the error shows the key: %s", s)
	}
}

func TestNew(t *testing.T) {
	https := must(url.Parse("https://api.example.com"))
	plain := must(url.Parse("http://127.0.0.1:1"))
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Routes: map[string]Route{"openai": {https, "sk-0123456789", Bearer}}}, ""},
		{"no routes", Config{}, ""},
		{"http allowed", Config{Routes: map[string]Route{"openai": {plain, "sk-0123456789", Bearer}}, AllowHTTP: map[string]bool{"openai": true}}, ""},
		{"http", Config{Routes: map[string]Route{"openai": {plain, "sk-0123456789", Bearer}}, AllowHTTP: map[string]bool{"xai": true}}, "plain http is refused"},
		{"unknown route", Config{Routes: map[string]Route{"evil": {https, "sk-0123456789", Bearer}}}, "known routes: anthropic"},
		{"alias is not a route name", Config{Routes: map[string]Route{"gemini": {https, "sk-0123456789", GoogAPIKey}}}, "unknown route"},
		{"no upstream", Config{Routes: map[string]Route{"openai": {nil, "sk-0123456789", Bearer}}}, "no upstream"},
		{"short key", Config{Routes: map[string]Route{"openai": {https, "sk-1", Bearer}}}, "not an API key"},
		{"key with newline", Config{Routes: map[string]Route{"openai": {https, "sk-0123456789\nX: y", Bearer}}}, "not an API key"},
		{"key is the dummy", Config{Routes: map[string]Route{"openai": {https, "sk-proxy-and-more", Bearer}}}, "overlap"},
		{"query style", Config{Routes: map[string]Route{"google": {https, "sk-0123456789", QueryKey}}}, "cannot send"},
		{"no style", Config{Routes: map[string]Route{"google": {https, "sk-0123456789", 0}}}, "cannot send"},
		{"bad dummy", Config{Dummy: "a b"}, "dummy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: %v, want %q", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789") {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
	p := must(New(Config{Routes: map[string]Route{"xai": {https, "sk-0123456789", Bearer}, "openai": {https, "sk-0123456789", Bearer}}}))
	if got := p.Names(); !slices.Equal(got, []string{"openai", "xai"}) {
		t.Errorf("Names() = %v", got)
	}
}
