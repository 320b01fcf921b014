package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/rcfile"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// ghFlags give the sandbox the GitHub API with the user's token held
// outside (--gh).
type ghFlags struct {
	GH bool `name:"gh" help:"GitHub API access for gh and other clients: they reach api.github.com through the auth proxy, which puts in your token (GH_TOKEN or GITHUB_TOKEN, from the environment or stockaderc); the sandbox holds a placeholder. Loosens the sandbox."`
}

// github is what --gh adds to a job: the github route with the real token
// (for job.Job.Auth), the variables that point gh and other clients at the
// auth proxy, and the loosenings to print.
type github struct {
	route     job.AuthRoute
	allowHTTP bool
	env       map[string]string
	loosened  []string
}

// github reads the user's token and the route's upstream (the config's
// upstream = ["github=URL"]); nil without --gh.
func (f ghFlags) github(p policy.Policy) (*github, error) {
	if !f.GH {
		return nil, nil
	}
	if p.Network != "proxy" {
		return nil, errors.New("--gh needs network mode proxy (the auth proxy); --network none leaves gh no way to GitHub")
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if global, err := rcfile.GlobalPath(); err == nil {
		m, err := rcfile.Load(global)
		if err != nil {
			return nil, err
		}
		env = rcfile.Merge(env, m)
	}
	upstreams := map[string]*url.URL{}
	var allowHTTP bool
	for _, u := range p.Upstream {
		route, parsed, err := authproxy.ParseUpstream(u, strings.Contains(u, "=http://"))
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w", u, err)
		}
		if route == "github" {
			upstreams[route], allowHTTP = parsed, parsed.Scheme == "http"
		}
	}
	r, ok := authproxy.RoutesFromEnv(env, upstreams)["github"]
	if !ok {
		return nil, errors.New("--gh: no GitHub token: set GH_TOKEN (gh auth token prints yours) in the environment or in ~/.config/stockade/stockaderc")
	}
	// What the proxy would refuse at the start of the session is refused
	// now, before anything is made.
	if _, err := authproxy.New(authproxy.Config{Routes: map[string]authproxy.Route{"github": r}, AllowHTTP: map[string]bool{"github": allowHTTP}}); err != nil {
		return nil, fmt.Errorf("--gh: %w", err)
	}
	prov, _ := authproxy.LookupProvider("github")
	g := &github{
		route:     job.AuthRoute{Upstream: r.Upstream.String(), Key: r.Key, Style: r.Style},
		allowHTTP: allowHTTP,
		env: map[string]string{
			// gh sends everything over the socket its config names.
			"GH_CONFIG_DIR": sandboxnet.GitHubDir, "GH_NO_UPDATE_NOTIFIER": "1",
			prov.BaseURLEnv: sandboxnet.AuthURL + "/github",
		},
		loosened: []string{"gh: the sandbox can call the GitHub API as you (your token stays outside, in the auth proxy; each request is audited)"},
	}
	for _, k := range prov.KeyEnv {
		g.env[k] = sandboxnet.DummyKey
	}
	if allowHTTP {
		g.loosened = append(g.loosened, fmt.Sprintf("upstream github=%s: plain http: the real token and every request of the route cross the network unencrypted", r.Upstream))
	}
	return g, nil
}

// add puts the route in j, beside the agent's.
func (g *github) add(j *job.Job) {
	if j.Auth == nil {
		j.Auth = map[string]job.AuthRoute{}
	}
	j.Auth["github"] = g.route
	if g.allowHTTP && !slices.Contains(j.AllowHTTP, "github") {
		j.AllowHTTP = append(j.AllowHTTP, "github")
	}
	j.GitHub = true
}
