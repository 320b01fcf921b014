package agent

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stockade-dev/stockade/internal/authproxy"
)

// TestOpencodeProviders: OpenCode is given every route of the auth proxy,
// and its config names only the routes that have a key, each with its
// client's path.
func TestOpencodeProviders(t *testing.T) {
	p := Profiles["opencode"]
	for _, route := range authproxy.Names() {
		if route == "github" {
			// gh's route (--gh), not a model provider: no agent's
			// profile may name it, or a GITHUB_TOKEN in the
			// environment would reach the API without --gh.
			if slices.Contains(p.Routes, route) {
				t.Errorf("OpenCode is given the route github")
			}
			continue
		}
		if _, ok := opencodeProviders[route]; !ok || !slices.Contains(p.Routes, route) {
			t.Errorf("OpenCode is not given the auth proxy route %s", route)
		}
	}
	for route := range opencodeProviders {
		if _, ok := authproxy.LookupProvider(route); !ok {
			t.Errorf("opencodeProviders has %s, which is no route of the auth proxy", route)
		}
	}
	var cfg struct {
		Autoupdate bool
		Share      string
		Provider   map[string]struct {
			Options struct{ BaseURL, APIKey string }
		}
	}
	env := p.RouteEnv([]string{"google", "groq"})
	if err := json.Unmarshal([]byte(env["OPENCODE_CONFIG_CONTENT"]), &cfg); err != nil {
		t.Fatalf("OPENCODE_CONFIG_CONTENT: %v\n%s", err, env["OPENCODE_CONFIG_CONTENT"])
	}
	if len(cfg.Provider) != 2 || cfg.Provider["google"].Options.BaseURL != "http://127.0.0.1:2376/google/v1beta" ||
		cfg.Provider["groq"].Options.BaseURL != "http://127.0.0.1:2376/groq/v1" || cfg.Provider["google"].Options.APIKey != "sk-proxy" ||
		cfg.Autoupdate || cfg.Share != "disabled" {
		t.Errorf("OPENCODE_CONFIG_CONTENT for google and groq: %s", env["OPENCODE_CONFIG_CONTENT"])
	}
}
