package authproxy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Style is a place a request carries an API key.
type Style int

const (
	XAPIKey    Style = iota + 1 // x-api-key: KEY (Anthropic)
	Bearer                      // Authorization: Bearer KEY
	GoogAPIKey                  // x-goog-api-key: KEY (Google)
	QueryKey                    // ?key=KEY: accepted from the agent, never sent upstream
	Token                       // Authorization: token KEY (GitHub, and the gh CLI)
)

func (s Style) String() string {
	switch s {
	case XAPIKey:
		return "x-api-key"
	case Bearer:
		return "Authorization: Bearer"
	case GoogAPIKey:
		return "x-goog-api-key"
	case QueryKey:
		return "?key="
	case Token:
		return "Authorization: token"
	}
	return fmt.Sprintf("Style(%d)", int(s))
}

// Provider is one row of the route table: what the proxy and the wiring
// know about an API provider.
type Provider struct {
	Name     string   // the route: the first path segment, http://127.0.0.1:2376/<Name>/
	Aliases  []string // other names accepted for the route
	Upstream string   // default base URL; --upstream replaces it
	Style    Style    // where the real key is sent
	Accept   []Style  // where the agent's dummy key may be
	KeyEnv   []string // variables holding the real key, first set wins
	// OAuthEnv holds an OAuth token used when no KeyEnv is set; it is sent
	// as Authorization: Bearer whatever Style says.
	OAuthEnv string
	// BaseURLEnv is the variable the agent's client reads its base URL from
	// ("" when there is no common one) and BaseURLSuffix what the client
	// expects after the route (e.g. "/v1" for OpenAI-compatible clients).
	BaseURLEnv    string
	BaseURLSuffix string
}

// providers is the route table. Policy is data: a change here is checked by
// TestProviderTable.
var providers = []Provider{
	{Name: "anthropic", Upstream: "https://api.anthropic.com", Style: XAPIKey, Accept: []Style{XAPIKey, Bearer},
		KeyEnv: []string{"ANTHROPIC_API_KEY"}, OAuthEnv: "CLAUDE_CODE_OAUTH_TOKEN", BaseURLEnv: "ANTHROPIC_BASE_URL"},
	{Name: "openai", Upstream: "https://api.openai.com", Style: Bearer, Accept: []Style{Bearer},
		KeyEnv: []string{"OPENAI_API_KEY"}, BaseURLEnv: "OPENAI_BASE_URL", BaseURLSuffix: "/v1"},
	// Google's OpenAI-compatible endpoint (/v1beta/openai/) takes the key as
	// a bearer token: accepted, and sent as x-goog-api-key like the rest.
	{Name: "google", Aliases: []string{"gemini"}, Upstream: "https://generativelanguage.googleapis.com", Style: GoogAPIKey,
		Accept: []Style{GoogAPIKey, QueryKey, Bearer}, KeyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, BaseURLEnv: "GOOGLE_GEMINI_BASE_URL"},
	{Name: "openrouter", Upstream: "https://openrouter.ai/api", Style: Bearer, Accept: []Style{Bearer},
		KeyEnv: []string{"OPENROUTER_API_KEY"}, BaseURLSuffix: "/v1"},
	{Name: "groq", Upstream: "https://api.groq.com/openai", Style: Bearer, Accept: []Style{Bearer},
		KeyEnv: []string{"GROQ_API_KEY"}, BaseURLSuffix: "/v1"},
	{Name: "deepseek", Upstream: "https://api.deepseek.com", Style: Bearer, Accept: []Style{Bearer},
		KeyEnv: []string{"DEEPSEEK_API_KEY"}, BaseURLSuffix: "/v1"},
	{Name: "mistral", Upstream: "https://api.mistral.ai", Style: Bearer, Accept: []Style{Bearer},
		KeyEnv: []string{"MISTRAL_API_KEY"}, BaseURLSuffix: "/v1"},
	{Name: "xai", Upstream: "https://api.x.ai", Style: Bearer, Accept: []Style{Bearer},
		KeyEnv: []string{"XAI_API_KEY"}, BaseURLSuffix: "/v1"},
	// GitHub's REST and GraphQL API (run --gh): the gh CLI sends its token
	// as "token"; other clients as a bearer token. GITHUB_API_URL is what
	// Actions-style clients read their base from.
	{Name: "github", Upstream: "https://api.github.com", Style: Token, Accept: []Style{Token, Bearer},
		KeyEnv: []string{"GH_TOKEN", "GITHUB_TOKEN"}, BaseURLEnv: "GITHUB_API_URL"},
}

// GitHubHost is the Host that requests on a unix socket (the gh CLI's
// http_unix_socket) carry for the github route; Config.HostRoutes maps it.
const GitHubHost = "api.github.com"

// Providers returns a copy of the route table.
func Providers() []Provider {
	out := make([]Provider, len(providers))
	for i, p := range providers {
		p.Aliases, p.Accept, p.KeyEnv = slices.Clone(p.Aliases), slices.Clone(p.Accept), slices.Clone(p.KeyEnv)
		out[i] = p
	}
	return out
}

// LookupProvider finds a provider by name or alias (case-insensitive).
func LookupProvider(name string) (Provider, bool) {
	name = strings.ToLower(name)
	for _, p := range Providers() {
		if p.Name == name || slices.Contains(p.Aliases, name) {
			return p, true
		}
	}
	return Provider{}, false
}

// Names returns the route names of the table, in table order.
func Names() []string {
	var out []string
	for _, p := range providers {
		out = append(out, p.Name)
	}
	return out
}

// RoutesFromEnv builds a route for every provider whose key is set in env
// (the merged host environment and stockaderc files), with the default
// upstream or the one in upstreams (from ParseUpstream).
func RoutesFromEnv(env map[string]string, upstreams map[string]*url.URL) map[string]Route {
	out := map[string]Route{}
	for _, p := range providers {
		r := Route{Style: p.Style}
		for _, name := range p.KeyEnv {
			if env[name] != "" {
				r.Key = env[name]
				break
			}
		}
		if r.Key == "" && p.OAuthEnv != "" && env[p.OAuthEnv] != "" {
			r.Key, r.Style = env[p.OAuthEnv], Bearer
		}
		if r.Key == "" {
			continue
		}
		if u := upstreams[p.Name]; u != nil {
			r.Upstream = u
		} else {
			r.Upstream, _ = url.Parse(p.Upstream) // checked by TestProviderTable
		}
		out[p.Name] = r
	}
	return out
}

// SandboxEnv returns the variables the sandbox gets for routes: for each,
// the dummy key in the variable the client reads it from (the OAuth one
// when the route sends a token as Bearer) and, where the table knows the
// client's base-URL variable, base/<route><suffix>. base is
// "http://127.0.0.1:2376".
func SandboxEnv(routes map[string]Route, base, dummy string) map[string]string {
	out := map[string]string{}
	for _, p := range providers {
		r, ok := routes[p.Name]
		if !ok {
			continue
		}
		if p.OAuthEnv != "" && r.Style == Bearer {
			out[p.OAuthEnv] = dummy
		} else {
			for _, name := range p.KeyEnv {
				out[name] = dummy
			}
		}
		if p.BaseURLEnv != "" {
			out[p.BaseURLEnv] = strings.TrimSuffix(base, "/") + "/" + p.Name + p.BaseURLSuffix
		}
	}
	return out
}
