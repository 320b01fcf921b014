package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/environ"
)

// SourceDefault is the provenance of a built-in value.
const SourceDefault = "default"

// Entry is one list entry and where it came from.
type Entry struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Resolved is the effective policy with the provenance of every value, for
// `stockade policy show`.
type Resolved struct {
	Policy Policy `json:"policy"`
	// Sources maps each scalar key (workdir, allow_hooks, memory, cpus, pids,
	// log_level, network) to the source of its value: SourceDefault, a file
	// path, "env STOCKADE_MEMORY" or "flag --memory".
	Sources map[string]string `json:"sources"`
	// ListSources maps each list key (ro, rw, protect, mask, unmask, env) to
	// its entries in order, each with the source that added it first.
	ListSources map[string][]Entry `json:"list_sources"`
}

// Resolve layers the settings on top of Default(cwd). Layers are applied in
// Kind order whatever order they are passed in (admin < user < project < env
// < flag); within a kind, in the order given. A scalar from a later layer
// replaces the earlier value; lists accumulate, keeping the first source of
// a duplicate entry.
//
// The admin layer is a bound, not a default: a later layer that sets
// allow_hooks true when the admin set false (or protects a hook directory),
// raises an admin memory/cpus/pids limit, changes the admin network, or
// unmasks an admin mask or protect entry is an error naming both sources.
//
// When allow_hooks is true, the hook directories are removed from Protect;
// unmask entries remove equal Mask entries and stay in Unmask, so the mount
// code can also exempt them from a glob (".env.*" vs ".env.example").
func Resolve(cwd string, layers ...Layer) (Resolved, error) {
	sorted := slices.Clone(layers)
	slices.SortStableFunc(sorted, func(a, b Layer) int { return int(a.Kind - b.Kind) })

	r := newResolved(Default(filepath.Clean(cwd)))
	var admin *Layer
	for i := range sorted {
		l := &sorted[i]
		switch {
		case l.Kind < KindAdmin || l.Kind > KindFlag:
			return Resolved{}, fmt.Errorf("resolving policy: layer %q has no valid kind", l.Source)
		case l.Kind == KindProject && l.Workdir != nil:
			return Resolved{}, fmt.Errorf("%s: key \"workdir\" is not allowed in a project file, which lives in the workdir; remove it and use --workdir or STOCKADE_WORKDIR", l.Source)
		case l.Kind == KindAdmin && admin != nil:
			return Resolved{}, fmt.Errorf("resolving policy: two admin layers (%s and %s)", admin.Source, l.Source)
		case admin != nil:
			if err := checkAdmin(admin, l); err != nil {
				return Resolved{}, err
			}
		}
		if l.Kind == KindProject {
			if err := checkProject(l, &r); err != nil {
				return Resolved{}, err
			}
		}
		r.apply(l)
		if l.Kind == KindAdmin {
			admin = l
		}
	}
	r.finish()
	return r, nil
}

// Undo says how to drop the setting of scalar key, from wherever r took it:
// "drop --memory", "unset STOCKADE_MEMORY", or `remove "memory" from FILE`;
// "" for a default.
func (r Resolved) Undo(key string) string {
	src := r.Sources[key]
	if flag, ok := strings.CutPrefix(src, "flag "); ok {
		return "drop " + flag
	}
	if env, ok := strings.CutPrefix(src, "env "); ok {
		return "unset " + env
	}
	if src == SourceDefault || src == "" {
		return ""
	}
	return fmt.Sprintf("remove %q from %s", key, src)
}

func newResolved(p Policy) Resolved {
	r := Resolved{Policy: p, Sources: map[string]string{}, ListSources: map[string][]Entry{}}
	for _, k := range fileKeys {
		if !slices.Contains(listKeys, k) {
			r.Sources[k] = SourceDefault
		}
	}
	for _, k := range listKeys {
		r.ListSources[k] = []Entry{}
	}
	// The built-in tables hold no duplicates (TestTables): no lookups.
	for key, vs := range map[string][]string{"protect": p.Protect, "mask": p.Mask} {
		es := make([]Entry, len(vs), len(vs)+8)
		for i, v := range vs {
			es[i] = Entry{Value: v, Source: SourceDefault}
		}
		r.ListSources[key] = es
	}
	return r
}

func (r *Resolved) addEntry(key, value, source string) {
	for _, e := range r.ListSources[key] {
		if e.Value == value {
			return
		}
	}
	r.ListSources[key] = append(r.ListSources[key], Entry{Value: value, Source: source})
}

func (r *Resolved) apply(l *Layer) {
	p := &r.Policy
	setScalar(r, l, "workdir", l.Workdir, &p.Workdir)
	setScalar(r, l, "allow_hooks", l.AllowHooks, &p.AllowHooks)
	setScalar(r, l, "shared_home", l.SharedHome, &p.SharedHome)
	setScalar(r, l, "gitconfig", l.GitConfig, &p.GitConfig)
	setScalar(r, l, "memory", l.Memory, &p.Memory)
	setScalar(r, l, "cpus", l.CPUs, &p.CPUs)
	setScalar(r, l, "pids", l.Pids, &p.Pids)
	setScalar(r, l, "log_level", l.LogLevel, &p.LogLevel)
	setScalar(r, l, "network", l.Network, &p.Network)
	setScalar(r, l, "agent_policy", l.AgentPolicy, &p.AgentPolicy)
	setScalar(r, l, "resolver", l.Resolver, &p.Resolver)
	setScalar(r, l, "terminal", l.Terminal, &p.Terminal)
	for _, key := range listKeys {
		if rules := l.rules(key); rules != nil {
			r.addRules(key, *rules, l.origin(key), l.presets)
			continue
		}
		for _, v := range *l.list(key) {
			r.addEntry(key, v, l.origin(key))
		}
	}
}

// addRules adds the rules of one layer to the policy as they are, and to
// ListSources as they print, with the preset a rule came from after its
// source ("flag --agent-allow, preset @npm").
func (r *Resolved) addRules(key string, rules []egress.Rule, source string, presets map[egress.Rule]string) {
	dst := &r.Policy.AgentAllow
	if key == "agent_block" {
		dst = &r.Policy.AgentBlock
	}
	for _, rule := range rules {
		if !slices.Contains(*dst, rule) {
			*dst = append(*dst, rule)
			src := source
			if p := presets[rule]; p != "" {
				src += presetSource + p
			}
			r.addEntry(key, rule.String(), src)
		}
	}
}

// presetSource joins a rule's source and the preset it came from.
const presetSource = ", preset "

// Preset returns the preset ("@npm") an agent_allow or agent_block rule came
// from, or "" for a rule written as itself.
func (r Resolved) Preset(key string, rule egress.Rule) string {
	for _, e := range r.ListSources[key] {
		if e.Value == rule.String() {
			if _, p, ok := strings.Cut(e.Source, presetSource); ok {
				return p
			}
		}
	}
	return ""
}

func setScalar[T any](r *Resolved, l *Layer, key string, v *T, dst *T) {
	if v != nil {
		*dst = *v
		r.Sources[key] = l.origin(key)
	}
}

// finish applies allow_hooks and unmask, then copies the lists into Policy.
func (r *Resolved) finish() {
	if r.Policy.AllowHooks {
		r.ListSources["protect"] = slices.DeleteFunc(r.ListSources["protect"], func(e Entry) bool {
			return slices.Contains(hookPaths, e.Value)
		})
	}
	for _, u := range r.ListSources["unmask"] {
		r.ListSources["mask"] = slices.DeleteFunc(r.ListSources["mask"], func(e Entry) bool {
			return e.Value == u.Value
		})
	}
	p := &r.Policy
	p.RO, p.RW = values(r.ListSources["ro"]), values(r.ListSources["rw"])
	p.Protect, p.Mask = values(r.ListSources["protect"]), values(r.ListSources["mask"])
	p.Unmask, p.Env = values(r.ListSources["unmask"]), values(r.ListSources["env"])
	p.Upstream = values(r.ListSources["upstream"])
	if p.Protect == nil {
		p.Protect = []string{}
	}
	if p.Mask == nil {
		p.Mask = []string{}
	}
}

func values(es []Entry) []string {
	var vs []string
	for _, e := range es {
		vs = append(vs, e.Value)
	}
	return vs
}

// checkAdmin refuses any loosening by l of what admin sets.
func checkAdmin(admin, l *Layer) error {
	if l.AllowHooks != nil && *l.AllowHooks {
		if admin.AllowHooks != nil && !*admin.AllowHooks {
			return adminError(l, "allow_hooks", "true", admin, "sets allow_hooks false; remove the setting")
		}
		for _, h := range hookPaths {
			if slices.Contains(admin.Protect, h) {
				return adminError(l, "allow_hooks", "true", admin, fmt.Sprintf("protects %q; remove the setting", h))
			}
		}
	}
	if l.SharedHome != nil && *l.SharedHome && admin.SharedHome != nil && !*admin.SharedHome {
		return adminError(l, "shared_home", "true", admin, "sets shared_home false; remove the setting")
	}
	if l.GitConfig != nil && *l.GitConfig && admin.GitConfig != nil && !*admin.GitConfig {
		return adminError(l, "gitconfig", "true", admin, "sets gitconfig false; remove the setting")
	}
	if err := ceiling(l, admin, "memory", l.Memory, admin.Memory, FormatSize); err != nil {
		return err
	}
	if err := ceiling(l, admin, "cpus", l.CPUs, admin.CPUs, formatCPUs); err != nil {
		return err
	}
	if err := ceiling(l, admin, "pids", l.Pids, admin.Pids, formatPids); err != nil {
		return err
	}
	if l.AgentPolicy != nil && admin.AgentPolicy != nil && *admin.AgentPolicy == "deny" && *l.AgentPolicy != "deny" {
		return adminError(l, "agent_policy", strconv.Quote(*l.AgentPolicy), admin, `sets agent_policy "deny"; remove the setting`)
	}
	if l.Terminal != nil && admin.Terminal != nil && *admin.Terminal == DefaultTerminal && *l.Terminal != DefaultTerminal {
		return adminError(l, "terminal", strconv.Quote(*l.Terminal), admin, `sets terminal "filtered"; remove the setting`)
	}
	if l.Network != nil && admin.Network != nil && *l.Network != *admin.Network {
		return adminError(l, "network", strconv.Quote(*l.Network), admin,
			fmt.Sprintf("sets network %q; remove the setting", *admin.Network))
	}
	for _, u := range l.Unmask {
		for _, list := range []struct {
			verb    string
			entries []string
		}{{"masks", admin.Mask}, {"protects", admin.Protect}} {
			for _, m := range list.entries {
				if overlaps(m, u) {
					return adminError(l, "unmask", strconv.Quote(u), admin,
						fmt.Sprintf("%s %q; remove the entry", list.verb, m))
				}
			}
		}
	}
	return nil
}

// notRaised refuses a limit v of project layer l above cur, the limit the
// earlier layers (or the default) set; a zero cur is no limit.
func notRaised[T int64 | float64](l *Layer, r *Resolved, key string, v *T, cur T, format func(T) string) error {
	if v == nil || cur == 0 || *v <= cur {
		return nil
	}
	from := "the default"
	if s := r.Sources[key]; s != SourceDefault {
		from = "set by " + s
	}
	return ref{kind: l.Kind, source: l.Source, key: key}.errorf(format(*v),
		"is not allowed: a project file may only tighten the sandbox (it raises the %s limit above %s, %s); lower it, or pass it as a flag or put it in your own config",
		key, format(cur), from)
}

func formatCPUs(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
func formatPids(n int64) string   { return strconv.FormatInt(n, 10) }

func ceiling[T int64 | float64](l, admin *Layer, key string, v, limit *T, format func(T) string) error {
	if v == nil || limit == nil || *v <= *limit {
		return nil
	}
	return adminError(l, key, format(*v), admin,
		fmt.Sprintf("sets %s %s as the most allowed; ask for at most that", key, format(*limit)))
}

func adminError(l *Layer, key, shown string, admin *Layer, why string) error {
	return ref{kind: l.Kind, source: l.Source, key: key}.errorf(shown, "is not allowed: %s %s", admin.Source, why)
}

// overlaps reports whether unmasking u would expose any part of pattern m:
// the same path, a glob match either way, a path inside directory m, or a
// directory that contains m.
func overlaps(m, u string) bool {
	mc, uc := strings.TrimSuffix(m, "/"), strings.TrimSuffix(u, "/")
	if mc == uc {
		return true
	}
	if ok, _ := path.Match(mc, uc); ok {
		return true
	}
	if ok, _ := path.Match(uc, mc); ok {
		return true
	}
	return strings.HasPrefix(uc, mc+"/") || strings.HasPrefix(mc, uc+"/")
}

// checkProject refuses any loosening in a project file. The file comes with
// the repository, and the repository is what the agent may have written or
// what a stranger published: it may tighten the sandbox, never widen it.
// Loosenings belong on the command line or in the user's own config. r is
// the policy of the layers before l, whose limits l may lower, not raise.
func checkProject(l *Layer, r *Resolved) error {
	workdir := filepath.Dir(l.Source)
	deny := func(key, shown, why string) error {
		return ref{kind: l.Kind, source: l.Source, key: key}.errorf(shown,
			"is not allowed: a project file may only tighten the sandbox (%s); pass it as a flag or put it in your own config", why)
	}
	if l.AllowHooks != nil && *l.AllowHooks {
		return deny("allow_hooks", "true", "writable git hooks run outside the sandbox")
	}
	if len(l.Unmask) > 0 {
		return deny("unmask", strconv.Quote(l.Unmask[0]), "unmasking exposes a secret")
	}
	for _, p := range l.RW {
		if !within(p, workdir) {
			return deny("rw", strconv.Quote(p), "it is outside the project")
		}
	}
	for _, p := range l.RO {
		if !within(p, workdir) {
			return deny("ro", strconv.Quote(p), "it is outside the project")
		}
	}
	for _, e := range l.Env {
		// The name only: the value may be a secret.
		name, _, set := strings.Cut(e, "=")
		switch {
		case !set:
			return deny("env", strconv.Quote(name), "it passes a host variable in; a project file may only set a value, as NAME=VALUE")
		case !environ.ProjectSettable(name):
			return deny("env", strconv.Quote(name), "it may set only variables that change no code, traffic or credentials: "+
				strings.Join(environ.ProjectSettableNames(), ", "))
		}
	}
	p := r.Policy
	if err := notRaised(l, r, "memory", l.Memory, p.Memory, FormatSize); err != nil {
		return err
	}
	if err := notRaised(l, r, "cpus", l.CPUs, p.CPUs, formatCPUs); err != nil {
		return err
	}
	if err := notRaised(l, r, "pids", l.Pids, p.Pids, formatPids); err != nil {
		return err
	}
	if l.Network != nil && *l.Network != "none" && *l.Network != DefaultNetwork {
		return deny("network", strconv.Quote(*l.Network), "it opens the network")
	}
	if len(l.AgentAllow) > 0 {
		shown := l.AgentAllow[0].String()
		if p := l.presets[l.AgentAllow[0]]; p != "" {
			shown = p // as written, not the first host it expands to
		}
		return deny("agent_allow", strconv.Quote(shown), "an allow rule opens the network")
	}
	if l.AgentPolicy != nil && *l.AgentPolicy != DefaultAgentPolicy {
		return deny("agent_policy", strconv.Quote(*l.AgentPolicy), "it opens the network")
	}
	if l.Terminal != nil && *l.Terminal != DefaultTerminal {
		return deny("terminal", strconv.Quote(*l.Terminal), "the command could set your clipboard")
	}
	if l.Resolver != nil {
		return deny("resolver", strconv.Quote(*l.Resolver), "a resolver decides where allowed names lead")
	}
	if l.SharedHome != nil && *l.SharedHome {
		return deny("shared_home", "true", "a shared HOME carries what one project's command planted into the others")
	}
	if l.GitConfig != nil && *l.GitConfig {
		return deny("gitconfig", "true", "it hands your git identity to the sandbox")
	}
	if len(l.Upstream) > 0 {
		return deny("upstream", strconv.Quote(l.Upstream[0]), "an upstream receives the real API key")
	}
	return nil
}
