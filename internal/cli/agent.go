package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/stockade-dev/stockade/internal/agent"
	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/rcfile"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
	"github.com/stockade-dev/stockade/internal/session"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

// agentCmd runs a known agent with its profile. It is run with the
// agent's binary, guide and keys filled in.
type agentCmd struct {
	runCmd
	Upstream []string `sep:"none" help:"ROUTE=URL: send a provider route (anthropic, openai, google, …) to another upstream: a company gateway, a local model server; plain http only when written as http://; repeatable." placeholder:"ROUTE=URL"`
	EnvFile  string   `name:"env-file" help:"Also read provider keys from FILE (KEY=VALUE lines), over the stockaderc files." placeholder:"FILE"`
}

type claudeCmd struct{ agentCmd }
type codexCmd struct{ agentCmd }
type opencodeCmd struct{ agentCmd }
type geminiCmd struct{ agentCmd }

func (c *claudeCmd) Run() error   { return c.runAgent("claude") }
func (c *codexCmd) Run() error    { return c.runAgent("codex") }
func (c *opencodeCmd) Run() error { return c.runAgent("opencode") }
func (c *geminiCmd) Run() error   { return c.runAgent("gemini") }

func (c *agentCmd) Help() string {
	return `Runs the agent in a session, attached on a terminal (ctrl-] detaches), or
in the background with -d. Without a terminal (a script, a pipe) it runs in
the foreground only with the agent's own non-interactive arguments (claude
-p, codex exec, gemini -p or a prompt on stdin, opencode run); otherwise it
exits 2 and says so, before anything is set up.

Its profile: its install tree and
interpreter mounted read-only, a persistent sandbox HOME of its own in this
project (--shared-home: one for every project), the
provider API reached through the auth proxy, which swaps the placeholder key
the agent sees for the real one. Keys come from the environment,
~/.config/stockade/stockaderc, the project's .stockaderc and --env-file (later
wins). Arguments after -- go to the agent.`
}

func (c *agentCmd) runAgent(name string) error {
	p := agent.Profiles[name]
	in, err := agent.Find(p, os.Getenv("PATH"))
	if err != nil {
		return setupError{err}
	}
	args := c.Command
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if err := c.needsTerminal(name, args); err != nil {
		return err
	}
	c.homeName, c.agent = name, name
	c.display = append([]string{name}, args...)
	c.Command = append([]string{in.Command}, args...)
	c.extraEnv = p.Env
	c.prepare = func(j *job.Job, r policy.Resolved, h *sandboxhome.Home) error {
		return c.agentJob(j, r, h, p, in, args)
	}
	return c.runCmd.Run()
}

// needsTerminal refuses, before anything is set up, an agent whose
// full-screen interface would wait for a terminal that is not there: no -d,
// stdin or stdout not a terminal, and none of the agent's arguments that run
// it without one.
func (c *agentCmd) needsTerminal(name string, args []string) error {
	stdinTTY := term.IsTerminal(int(os.Stdin.Fd()))
	h := agent.HeadlessArgs[name]
	if c.Detach || stdinTTY && term.IsTerminal(int(os.Stdout.Fd())) || h.Runs(args, stdinTTY) {
		return nil
	}
	return usageError{fmt.Errorf("%s needs a terminal, and stdin or stdout is none: run it on a terminal, in the background with -d (then stockade attach -s ID), or without its interface: stockade %s -- %s",
		name, name, h.Example)}
}

// agentJob fills in what the profile adds to the job: mounts, PATH, routes
// with the real keys, the dummy-key variables, the guide, the HOME files.
func (c *agentCmd) agentJob(j *job.Job, r policy.Resolved, h *sandboxhome.Home, p agent.Profile, in agent.Install, args []string) error {
	keys, err := c.keys(j.Policy.Workdir)
	if err != nil {
		return err
	}
	upstreams := map[string]*url.URL{}
	var allowHTTP []string
	// Config first, then flags: a later entry for a route wins.
	for _, u := range append(slices.Clone(r.Policy.Upstream), c.Upstream...) {
		// Plain http is allowed only when the user wrote it.
		route, parsed, err := authproxy.ParseUpstream(u, strings.Contains(u, "=http://"))
		if err != nil {
			return fmt.Errorf("upstream %s: %w", u, err)
		}
		upstreams[route] = parsed
	}
	for _, route := range slices.Sorted(maps.Keys(upstreams)) {
		if u := upstreams[route]; u.Scheme == "http" {
			allowHTTP = append(allowHTTP, route)
			c.loosened = append(c.loosened, fmt.Sprintf("upstream %s=%s: plain http: the real API key and every request of the route cross the network unencrypted", route, u))
		}
	}
	all := authproxy.RoutesFromEnv(keys, upstreams)
	routes := map[string]authproxy.Route{}
	for _, name := range p.Routes {
		if r, ok := all[name]; ok {
			routes[name] = r
		}
	}
	if len(routes) == 0 {
		return noKey(p, j.Policy.Workdir)
	}
	if j.Policy.Network != "proxy" {
		return fmt.Errorf("%s needs network mode proxy (the auth proxy); --network none leaves it no way to its provider", p.Name)
	}
	if j.Auth == nil { // --gh may have put its route in
		j.Auth = map[string]job.AuthRoute{}
	}
	for name, r := range routes {
		j.Auth[name] = job.AuthRoute{Upstream: r.Upstream.String(), Key: r.Key, Style: r.Style}
	}
	for _, name := range allowHTTP {
		if !slices.Contains(j.AllowHTTP, name) {
			j.AllowHTTP = append(j.AllowHTTP, name)
		}
	}
	for k, v := range authproxy.SandboxEnv(routes, sandboxnet.AuthURL, sandboxnet.DummyKey) {
		j.Env = setEnv(j.Env, k, v)
	}
	names := slices.Sorted(maps.Keys(routes))
	if p.RouteEnv != nil {
		for k, v := range p.RouteEnv(names) {
			j.Env = setEnv(j.Env, k, v)
		}
	}
	if len(in.PathDirs) > 0 {
		j.Env = setEnv(j.Env, "PATH", strings.Join(in.PathDirs, ":")+":"+getEnv(j.Env, "PATH"))
	}
	if err := installExposed(j, h, p, in); err != nil {
		return err
	}
	for _, m := range in.Mounts {
		if !slices.Contains(j.Policy.RO, m) {
			j.Policy.RO = append(j.Policy.RO, m)
		}
	}
	guide := agent.Guide(agent.GuideInput{
		Session: j.ID, Workdir: j.Policy.Workdir, Home: j.Home, RW: j.Policy.RW,
		Network: j.Policy.Network, Capture: j.Policy.Network == "proxy" && !j.Containers, Mode: j.Policy.AgentPolicy, Allowed: ruleStrings(j.Policy.AgentAllow),
		Blocked: ruleStrings(j.Policy.AgentBlock), Routes: names, Protects: j.Policy.Protect,
	})
	sum := sha256.Sum256([]byte(guide))
	c.guide = &session.Guide{SHA256: hex.EncodeToString(sum[:])}
	if p.GuideFile != "" {
		if err := h.WriteGuide(p.GuideFile, guide); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		j.HomeProtect = append(j.HomeProtect, p.GuideFile)
		c.guide.Where = "~/" + p.GuideFile
	} else if len(p.GuideArgs) > 0 {
		c.guide.Where = "argument " + p.GuideArgs[0]
	}
	if err := h.Seed(p.HomeFiles); err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	if err := editHomeJSON(h, p, j.Policy.Workdir); err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	j.Argv = append(append([]string{in.Command}, p.Args(guide)...), args...)
	return nil
}

// editHomeJSON answers the agent's start-up questions in its settings
// files, for the project directory as the agent sees it: the workdir, and
// its canonical path when that differs.
func editHomeJSON(h *sandboxhome.Home, p agent.Profile, workdir string) error {
	workdirs := []string{workdir}
	if canon, err := filepath.EvalSymlinks(workdir); err == nil && canon != workdir {
		workdirs = append(workdirs, canon)
	}
	edits := p.JSONEdits(workdirs)
	for _, file := range slices.Sorted(maps.Keys(edits)) {
		err := h.EditJSON(file, func(doc map[string]any) bool {
			changed := false
			for _, e := range edits[file] {
				changed = e.Apply(doc) || changed
			}
			return changed
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// keys merges the places a provider key may come from: the environment,
// the global stockaderc, the project's .stockaderc, --env-file; later wins.
func (c *agentCmd) keys(workdir string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	layers := []map[string]string{env}
	global, err := rcfile.GlobalPath()
	if err == nil {
		m, err := rcfile.Load(global)
		if err != nil {
			return nil, err
		}
		layers = append(layers, m)
	}
	project, err := rcfile.Load(filepath.Join(workdir, ".stockaderc"))
	if err != nil {
		return nil, err
	}
	// A project file comes with the repository: replacing a key the user
	// set sends their prompts and code to someone else's account.
	before := rcfile.Merge(layers...)
	for k, v := range project {
		if old, ok := before[k]; ok && old != v {
			fmt.Fprintf(os.Stderr, "stockade: LOOSENED: the project's .stockaderc replaces your %s\n", termfilter.Visible(k))
		}
	}
	layers = append(layers, project)
	if c.EnvFile != "" {
		m, err := rcfile.Load(c.EnvFile)
		if err != nil {
			return nil, err
		}
		if _, serr := os.Stat(c.EnvFile); serr != nil {
			return nil, fmt.Errorf("--env-file %s: %w", c.EnvFile, errors.Unwrap(serr))
		}
		layers = append(layers, m)
	}
	return rcfile.Merge(layers...), nil
}

// noKey names every variable the agent's routes read a key from and every
// file stockade reads them from, so that the fix is one line away.
func noKey(p agent.Profile, workdir string) error {
	var vars []string
	for _, name := range p.Routes {
		if pr, ok := authproxy.LookupProvider(name); ok {
			vars = append(vars, pr.KeyEnv...)
			if pr.OAuthEnv != "" {
				vars = append(vars, pr.OAuthEnv)
			}
		}
	}
	global := "~/.config/stockade/stockaderc"
	if g, err := rcfile.GlobalPath(); err == nil {
		global = g
	}
	return fmt.Errorf("no API key for %s: set %s in the environment, in %s or %s (KEY=VALUE lines), or pass --env-file FILE",
		p.Name, orList(vars), global, filepath.Join(workdir, ".stockaderc"))
}

// orList joins names as "A, B or C".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func setEnv(env []string, k, v string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, k+"=") })
	return append(out, k+"="+v)
}

func getEnv(env []string, k string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, k+"="); ok {
			return v
		}
	}
	return ""
}

// ruleStrings writes rules as the user writes them.
func ruleStrings(rules []egress.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return out
}

// installExposed refuses an install whose mounts (bound read-only, as --ro
// is) would show the sandbox what no --ro may: "/", or the home directory
// or one that holds it (a node at ~/bin/node would bring in ~ whole),
// judged on the home's real path as on the one HOME names; and one found
// on PATH through a link in a tree the sandbox writes (a .venv/bin or
// node_modules/.bin on PATH), which an earlier session could have planted
// to choose what is mounted.
func installExposed(j *job.Job, h *sandboxhome.Home, p agent.Profile, in agent.Install) error {
	homes := []string{}
	if j.Home != "" {
		homes = append(homes, filepath.Clean(j.Home), existingCanon(j.Home))
	}
	for _, m := range in.Mounts {
		m = existingCanon(m)
		for _, home := range homes {
			if m == "/" || canonWithin(home, m) {
				return fmt.Errorf("%s: %s needs %s in the sandbox, which is the root directory or holds your home directory; install %s in a directory of its own (e.g. ~/.local/node)", p.Name, in.Command, m, p.Name)
			}
		}
	}
	writable := []string{existingCanon(j.Policy.Workdir)}
	for _, d := range j.Policy.RW {
		writable = append(writable, existingCanon(d))
	}
	if h != nil {
		writable = append(writable, existingCanon(h.Path))
	}
	in0 := func(p string) bool {
		return slices.ContainsFunc(writable, func(w string) bool { return canonWithin(p, w) })
	}
	for _, f := range in.Found {
		if in0(existingCanon(filepath.Dir(f[0]))) && !in0(existingCanon(f[1])) {
			return fmt.Errorf("%s: %s, found on PATH, is a link to %s, and lies in a tree the sandbox can write, where an earlier session could have planted it; take its directory off PATH, or put the real %s's first", p.Name, f[0], f[1], filepath.Base(f[0]))
		}
	}
	return nil
}
