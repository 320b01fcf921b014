package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/agent"
	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// opencodeRoutes: a model of each auth proxy route in OpenCode 1.18.33's
// catalog, and where the fake provider sees its request and its key.
var opencodeRoutes = []struct {
	route, keyEnv, model, keyField, request string
}{
	{"anthropic", "ANTHROPIC_API_KEY", "anthropic/claude-sonnet-4-5", `"x_api_key":"%s"`, "/v1/messages"},
	{"openai", "OPENAI_API_KEY", "openai/gpt-5", `"authorization":"Bearer %s"`, "/v1/responses"},
	{"google", "GEMINI_API_KEY", "google/gemini-2.5-flash", `"x_goog_api_key":"%s"`, ":streamGenerateContent"},
	{"openrouter", "OPENROUTER_API_KEY", "openrouter/openai/gpt-4o-mini", `"authorization":"Bearer %s"`, "/v1/chat/completions"},
	{"groq", "GROQ_API_KEY", "groq/llama-3.3-70b-versatile", `"authorization":"Bearer %s"`, "/v1/chat/completions"},
	{"deepseek", "DEEPSEEK_API_KEY", "deepseek/deepseek-flash", `"authorization":"Bearer %s"`, "/v1/chat/completions"},
	{"mistral", "MISTRAL_API_KEY", "mistral/mistral-large-latest", `"authorization":"Bearer %s"`, "/v1/chat/completions"},
	{"xai", "XAI_API_KEY", "xai/grok-4.3", `"authorization":"Bearer %s"`, "/v1/responses"},
}

// TestOpencodeProviders runs `stockade opencode -- run -m MODEL` against
// the fake provider once for every route of the auth proxy, with that
// provider's key alone: OpenCode answers with the canned reply, the
// provider got the request with the real key, never the placeholder, and
// the audit log has the request through the route and nothing denied.
func TestOpencodeProviders(t *testing.T) {
	requireSandbox(t)
	if os.Getenv("STOCKADE_FAKE_PROVIDER") == "" {
		requireTestnet(t)
	}
	dirs := append(filepath.SplitList(os.Getenv("STOCKADE_AGENT_BIN")), filepath.SplitList(os.Getenv("PATH"))...)
	in, err := agent.Find(agent.Profiles["opencode"], strings.Join(dirs, ":"))
	if err != nil {
		testenv.SkipOrFail(t, "%v (scripts/test.sh installs it)", err)
	}
	path := "PATH=" + strings.Join(append(dirs, in.PathDirs...), ":")
	for _, route := range authproxy.Names() {
		if route == "github" {
			continue // gh's route (--gh), not a model provider
		}
		i := 0
		for i < len(opencodeRoutes) && opencodeRoutes[i].route != route {
			i++
		}
		if i == len(opencodeRoutes) {
			t.Errorf("no OpenCode model for the auth proxy route %s", route)
			continue
		}
		c := opencodeRoutes[i]
		t.Run(route, func(t *testing.T) {
			e := newEnv(t)
			suffix := make([]byte, 8)
			rand.Read(suffix)
			key := "REALKEY-" + route + "-" + hex.EncodeToString(suffix)
			var logStart int64
			if fi, err := os.Stat(providerLog); err == nil {
				logStart = fi.Size()
			}
			r := e.run("", []string{path, c.keyEnv + "=" + key},
				"opencode", "--log-level", "error", "--upstream", route+"="+fakeProvider, "--", "run", "-m", c.model, "Say something.")
			if r.code != 0 || !strings.Contains(r.stdout, cannedReply) {
				t.Fatalf("stockade opencode -- run -m %s: exit %d\nstdout: %s\nstderr: %s", c.model, r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, key) {
				t.Error("the real key appears in stockade's output")
			}
			checkProviderLog(t, logStart, fmt.Sprintf(c.keyField, key), c.request)
			if runs := e.list(true); len(runs) == 1 {
				logs := e.run("", nil, "logs", "-s", runs[0].ID).stdout
				if !strings.Contains(logs, "auth proxy "+route+": POST ") || strings.Contains(logs, "network denied") {
					t.Errorf("the audit log lacks the request through the %s route, or has a denial:\n%s", route, logs)
				}
			} else {
				t.Errorf("the run is listed as %+v", runs)
			}
		})
	}
}
