package agent

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// opencodeProviders maps each auth proxy route to what OpenCode 1.18.33
// calls it and the path its client puts after the base URL. The provider
// ids are the routes' names in OpenCode's model catalog (models.dev), whose
// key variables are the auth proxy's (ANTHROPIC_API_KEY, GEMINI_API_KEY,
// GROQ_API_KEY, …). TestOpencodeProviders keeps a row for every route.
var opencodeProviders = map[string]struct{ id, path string }{
	"anthropic":  {"anthropic", "/v1"},  // @ai-sdk/anthropic: …/v1/messages
	"openai":     {"openai", "/v1"},     // @ai-sdk/openai: …/v1/responses
	"google":     {"google", "/v1beta"}, // @ai-sdk/google: …/v1beta/models/M:streamGenerateContent
	"openrouter": {"openrouter", "/v1"}, // https://openrouter.ai/api/v1
	"groq":       {"groq", "/v1"},       // https://api.groq.com/openai/v1
	"deepseek":   {"deepseek", "/v1"},
	"mistral":    {"mistral", "/v1"},
	"xai":        {"xai", "/v1"},
}

// opencodeRoutes are the routes OpenCode can use, sorted.
func opencodeRoutes() []string { return slices.Sorted(maps.Keys(opencodeProviders)) }

// opencodeEnv points OpenCode's clients at the auth proxy, for the routes
// that have a key only: OpenCode lists every provider its config names,
// with or without a key, and a provider without a route fails at the
// first request. The placeholder key is in the config too: OpenCode finds
// Google by GEMINI_API_KEY, but its Google client reads only
// GOOGLE_GENERATIVE_AI_API_KEY. Auto-update and sharing are off.
func opencodeEnv(routes []string) map[string]string {
	provider := map[string]any{}
	for _, r := range routes {
		if p, ok := opencodeProviders[r]; ok {
			provider[p.id] = map[string]any{"options": map[string]any{
				"baseURL": sandboxnet.AuthURL + "/" + r + p.path, "apiKey": sandboxnet.DummyKey}}
		}
	}
	b, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled", "provider": provider,
	})
	return map[string]string{"OPENCODE_CONFIG_CONTENT": string(b)}
}
