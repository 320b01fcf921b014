package authproxy

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestProviderTable checks the route table's invariants.
func TestProviderTable(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	envName := regexp.MustCompile(`^[A-Z][A-Z0-9_]*_(API_KEY|TOKEN)$`)
	seen := map[string]bool{}
	keyVars := map[string]bool{}
	for _, p := range Providers() {
		for _, n := range append([]string{p.Name}, p.Aliases...) {
			if !name.MatchString(n) || seen[n] {
				t.Errorf("%s: name %q is invalid or used twice", p.Name, n)
			}
			seen[n] = true
		}
		u, err := url.Parse(p.Upstream)
		if err != nil || checkUpstream(u, false) != nil || strings.HasSuffix(p.Upstream, "/") {
			t.Errorf("%s: upstream %q: %v %v", p.Name, p.Upstream, err, checkUpstream(u, false))
		}
		if p.Style != XAPIKey && p.Style != Bearer && p.Style != GoogAPIKey && p.Style != Token {
			t.Errorf("%s: cannot send a key as %v", p.Name, p.Style)
		}
		if !slices.Contains(p.Accept, p.Style) || len(slices.Compact(slices.Clone(p.Accept))) != len(p.Accept) {
			t.Errorf("%s: Accept %v must hold Style %v, once", p.Name, p.Accept, p.Style)
		}
		if slices.Contains(p.Accept, QueryKey) != (p.Style == GoogAPIKey) {
			t.Errorf("%s: ?key= is Google's convention only", p.Name)
		}
		if len(p.KeyEnv) == 0 {
			t.Errorf("%s: no key variable", p.Name)
		}
		for _, v := range append(slices.Clone(p.KeyEnv), p.OAuthEnv) {
			if v == "" && v == p.OAuthEnv {
				continue
			}
			if !envName.MatchString(v) || keyVars[v] {
				t.Errorf("%s: key variable %q is invalid or used twice", p.Name, v)
			}
			keyVars[v] = true
		}
		if p.OAuthEnv != "" && !slices.Contains(p.Accept, Bearer) {
			t.Errorf("%s: an OAuth token is a bearer token: Accept must hold Bearer", p.Name)
		}
		if p.BaseURLSuffix != "" && !strings.HasPrefix(p.BaseURLSuffix, "/") {
			t.Errorf("%s: suffix %q", p.Name, p.BaseURLSuffix)
		}
		if got, ok := LookupProvider(strings.ToUpper(p.Name)); !ok || got.Name != p.Name {
			t.Errorf("LookupProvider(%q) = %v, %v", p.Name, got.Name, ok)
		}
	}
	if want := []string{"anthropic", "openai", "google", "openrouter", "groq", "deepseek", "mistral", "xai", "github"}; !slices.Equal(Names(), want) {
		t.Errorf("Names() = %v, want %v", Names(), want)
	}
	// Providers returns a copy: changing it changes nothing here.
	Providers()[0].Accept[0] = QueryKey
	if providers[0].Accept[0] == QueryKey {
		t.Error("Providers() shares the table")
	}
}

func TestRoutesFromEnv(t *testing.T) {
	other := must(url.Parse("https://gateway.example.com/anthropic"))
	tests := []struct {
		name string
		env  map[string]string
		ups  map[string]*url.URL
		want map[string]Route // Upstream compared as a string
	}{
		{"none", map[string]string{"PATH": "/bin", "ANTHROPIC_API_KEY": ""}, nil, map[string]Route{}},
		{"api key", map[string]string{"ANTHROPIC_API_KEY": "a-key-1234"}, nil,
			map[string]Route{"anthropic": {must(url.Parse("https://api.anthropic.com")), "a-key-1234", XAPIKey}}},
		{"oauth", map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "oat-1234"}, nil,
			map[string]Route{"anthropic": {must(url.Parse("https://api.anthropic.com")), "oat-1234", Bearer}}},
		{"api key before oauth", map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "oat-1234", "ANTHROPIC_API_KEY": "a-key-1234"}, nil,
			map[string]Route{"anthropic": {must(url.Parse("https://api.anthropic.com")), "a-key-1234", XAPIKey}}},
		{"gemini before google", map[string]string{"GOOGLE_API_KEY": "g-2", "GEMINI_API_KEY": "g-1"}, nil,
			map[string]Route{"google": {must(url.Parse("https://generativelanguage.googleapis.com")), "g-1", GoogAPIKey}}},
		{"google key", map[string]string{"GOOGLE_API_KEY": "g-2"}, nil,
			map[string]Route{"google": {must(url.Parse("https://generativelanguage.googleapis.com")), "g-2", GoogAPIKey}}},
		{"upstream override", map[string]string{"ANTHROPIC_API_KEY": "a", "XAI_API_KEY": "x"}, map[string]*url.URL{"anthropic": other},
			map[string]Route{"anthropic": {other, "a", XAPIKey}, "xai": {must(url.Parse("https://api.x.ai")), "x", Bearer}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RoutesFromEnv(tt.env, tt.ups)
			eq := func(a, b Route) bool {
				return a.Upstream.String() == b.Upstream.String() && a.Key == b.Key && a.Style == b.Style
			}
			if !maps.EqualFunc(got, tt.want, eq) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSandboxEnv(t *testing.T) {
	routes := RoutesFromEnv(map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t", "OPENAI_API_KEY": "o", "GEMINI_API_KEY": "g", "GROQ_API_KEY": "q"}, nil)
	got := SandboxEnv(routes, "http://127.0.0.1:2376/", "sk-proxy")
	want := map[string]string{
		"CLAUDE_CODE_OAUTH_TOKEN": "sk-proxy", "ANTHROPIC_BASE_URL": "http://127.0.0.1:2376/anthropic",
		"OPENAI_API_KEY": "sk-proxy", "OPENAI_BASE_URL": "http://127.0.0.1:2376/openai/v1",
		"GEMINI_API_KEY": "sk-proxy", "GOOGLE_API_KEY": "sk-proxy", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:2376/google",
		"GROQ_API_KEY": "sk-proxy",
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestParseUpstream(t *testing.T) {
	tests := []struct {
		in        string
		allowHTTP bool
		route     string
		url       string
		wantErr   string // "" means no error
	}{
		{"anthropic=https://llm.example.com", false, "anthropic", "https://llm.example.com", ""},
		{"anthropic=https://llm.example.com/base/", false, "anthropic", "https://llm.example.com/base", ""},
		{"Gemini=https://g.example.com:8443", false, "google", "https://g.example.com:8443", ""},
		{"anthropic=http://203.0.113.10:8080", true, "anthropic", "http://203.0.113.10:8080", ""},
		{"anthropic=http://203.0.113.10:8080", false, "", "", "plain http is refused"},
		{"openai=https://user:s3cret@api.example.com", false, "", "", "credentials in the URL"},
		{"openai=https://api.example.com/?key=s3cret", false, "", "", "query"},
		{"openai=https://api.example.com/#s3cret", false, "", "", "fragment"},
		{"openai=ftp://api.example.com", false, "", "", "scheme must be https"},
		{"openai=https://", false, "", "", "no host"},
		{"openai=https:s3cret", false, "", "", "no host"},
		{"openai=api.example.com", false, "", "", "scheme must be https"},
		{"evil=https://api.example.com", false, "", "", "known routes: anthropic, openai, google, openrouter, groq, deepseek, mistral, xai"},
		{"openai", false, "", "", "want ROUTE=URL"},
		{"=https://x", false, "", "", "want ROUTE=URL"},
		{"openai=", false, "", "", "want ROUTE=URL"},
		{"openai=%zz", false, "", "", "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			route, u, err := ParseUpstream(tt.in, tt.allowHTTP)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error repeats the URL: %v", err)
				}
				return
			}
			if err != nil || route != tt.route || u.String() != tt.url {
				t.Errorf("got %q %v %v, want %q %q", route, u, err, tt.route, tt.url)
			}
		})
	}
}
