package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/environ"
)

// Kind says where a Layer comes from, in precedence order: a later kind
// overrides an earlier one. The zero Kind is not valid.
type Kind int

const (
	KindAdmin   Kind = iota + 1 // AdminPath: later layers may tighten it, never loosen it
	KindUser                    // $XDG_CONFIG_HOME/stockade/config.json
	KindProject                 // <workdir>/.stockade.json; may not set workdir
	KindEnv                     // STOCKADE_* environment variables
	KindFlag                    // command-line flags
)

func (k Kind) String() string {
	switch k {
	case KindAdmin:
		return "admin"
	case KindUser:
		return "user"
	case KindProject:
		return "project"
	case KindEnv:
		return "env"
	case KindFlag:
		return "flag"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Layer is the settings one source makes. A nil pointer or an empty list
// means the source says nothing about that key. Paths in RO, RW and Workdir
// are absolute; Protect, Mask and Unmask hold normalized patterns (Pattern);
// AgentAllow and AgentBlock hold parsed rules (egress.ParseRules: presets expanded). Build layers with LoadFile, FromEnv and FromFlags, which check every value.
type Layer struct {
	Kind Kind
	// Source is the file path for file layers, "env" or "flag" otherwise.
	Source string

	Workdir                            *string
	RO, RW, Protect, Mask, Unmask, Env []string
	AllowHooks, SharedHome, GitConfig  *bool
	Memory                             *int64
	CPUs                               *float64
	Pids                               *int64
	LogLevel                           *string
	Network                            *string
	AgentPolicy, Resolver              *string
	AgentAllow, AgentBlock             []egress.Rule
	Upstream                           []string
	Terminal                           *string

	// presets names the preset ("@npm") each rule of AgentAllow and
	// AgentBlock came from, when it came from one: policy show says so.
	presets map[egress.Rule]string
}

// fileKeys are the keys of a config file, in the order errors list them.
// Each is also a STOCKADE_<KEY> variable and a --<key> flag ("_" → "-").
var fileKeys = []string{
	"ro", "rw", "protect", "mask", "unmask", "allow_hooks", "env",
	"memory", "cpus", "pids", "log_level", "network",
	"agent_policy", "agent_allow", "agent_block", "resolver", "upstream", "shared_home", "workdir",
	"terminal", "gitconfig",
}

// listKeys accumulate across layers; every other key is a scalar.
var listKeys = []string{"ro", "rw", "protect", "mask", "unmask", "env", "agent_allow", "agent_block", "upstream"}

func isList(key string) bool     { return slices.Contains(listKeys, key) }
func envName(key string) string  { return "STOCKADE_" + strings.ToUpper(key) }
func flagName(key string) string { return "--" + strings.ReplaceAll(key, "_", "-") }

// list returns the field that holds list key, or nil for a scalar key and
// for the rule lists (rules).
func (l *Layer) list(key string) *[]string {
	switch key {
	case "ro":
		return &l.RO
	case "rw":
		return &l.RW
	case "protect":
		return &l.Protect
	case "mask":
		return &l.Mask
	case "unmask":
		return &l.Unmask
	case "env":
		return &l.Env
	case "upstream":
		return &l.Upstream
	}
	return nil
}

// rules returns the field that holds rule list key, or nil for any other key.
func (l *Layer) rules(key string) *[]egress.Rule {
	switch key {
	case "agent_allow":
		return &l.AgentAllow
	case "agent_block":
		return &l.AgentBlock
	}
	return nil
}

// origin is the provenance of key in this layer, as `policy show` prints it.
func (l *Layer) origin(key string) string {
	return ref{kind: l.Kind, source: l.Source, key: key}.origin()
}

// ref names one key of one source, for provenance and error messages.
type ref struct {
	kind   Kind
	source string
	key    string
}

func (r ref) origin() string {
	switch r.kind {
	case KindEnv:
		return "env " + envName(r.key)
	case KindFlag:
		return "flag " + flagName(r.key)
	}
	return r.source
}

// errorf builds the one-line error the user sees: where the value is,
// the value as written (shown), then what is wrong and how to fix it.
func (r ref) errorf(shown, format string, args ...any) error {
	return fmt.Errorf("%s %s %s", r.where(), shown, fmt.Sprintf(format, args...))
}

// where is the prefix of every error about r: `file: "key":` for files,
// `env STOCKADE_KEY:` or `flag --key:` otherwise.
func (r ref) where() string {
	if r.kind == KindEnv || r.kind == KindFlag {
		return r.origin() + ":"
	}
	return fmt.Sprintf("%s: %q:", r.source, r.key)
}

// set parses text as the value of scalar key r.key. base resolves a relative
// workdir; shown is the value as the user wrote it.
func (l *Layer) set(r ref, text, shown, base string) error {
	var err error
	switch r.key {
	case "workdir":
		var p string
		p, err = hostPath(text, base)
		l.Workdir = &p
	case "allow_hooks":
		var b bool
		b, err = parseBool(text)
		l.AllowHooks = &b
	case "shared_home":
		var b bool
		b, err = parseBool(text)
		l.SharedHome = &b
	case "gitconfig":
		var b bool
		b, err = parseBool(text)
		l.GitConfig = &b
	case "memory":
		var n int64
		if n, err = ParseSize(text); err == nil {
			err = positive(r, n == 0)
		}
		l.Memory = &n
	case "cpus":
		var f float64
		if f, err = parseCPUs(text); err == nil {
			err = positive(r, f == 0)
		}
		l.CPUs = &f
	case "pids":
		var n int64
		if n, err = parsePids(text); err == nil {
			err = positive(r, n == 0)
		}
		l.Pids = &n
	case "log_level":
		var s string
		s, err = parseChoice(text, logLevels, "log level")
		l.LogLevel = &s
	case "network":
		var s string
		s, err = parseChoice(text, networks, "network mode")
		l.Network = &s
	case "agent_policy":
		var s string
		s, err = parseChoice(text, agentModes, "agent policy")
		l.AgentPolicy = &s
	case "resolver":
		var s string
		s, err = parseResolver(text)
		l.Resolver = &s
	case "terminal":
		var s string
		s, err = parseChoice(text, terminals, "terminal mode")
		l.Terminal = &s
	default:
		return fmt.Errorf("setting %q: not a scalar key", r.key)
	}
	if err != nil {
		return r.errorf(shown, "%v", err)
	}
	return nil
}

// add parses one entry of list key r.key. base resolves relative ro/rw paths.
func (l *Layer) add(r ref, entry, shown, base string) error {
	if rules := l.rules(r.key); rules != nil {
		// The rule is parsed here, once, by the parser the session uses
		// at run time, which also expands presets (@npm); its error names
		// the rule and the fix.
		parsed, err := egress.ParseRules(entry)
		if err != nil {
			return fmt.Errorf("%s %w", r.where(), err)
		}
		if p, ok := egress.LookupPreset(entry); ok {
			if l.presets == nil {
				l.presets = map[egress.Rule]string{}
			}
			for _, rule := range parsed {
				// A rule already in the list keeps the source it had.
				if !slices.Contains(*rules, rule) {
					l.presets[rule] = egress.PresetPrefix + p.Name
				}
			}
		}
		*rules = append(*rules, parsed...)
		return nil
	}
	v := entry
	var err error
	switch r.key {
	case "ro", "rw":
		if v, err = hostPath(entry, base); err == nil {
			err = existing(v, osStat)
		}
	case "protect", "mask", "unmask":
		v, err = Pattern(entry)
	case "upstream":
		v, err = parseUpstreamSyntax(entry)
	case "env":
		// ParseEntry's error names the variable and never shows the value,
		// which may be a secret.
		if _, _, _, err := environ.ParseEntry(entry); err != nil {
			return fmt.Errorf("%s %v", r.where(), err)
		}
	default:
		return fmt.Errorf("adding to %q: not a list key", r.key)
	}
	if err != nil {
		return r.errorf(shown, "%v", err)
	}
	*l.list(r.key) = append(*l.list(r.key), v)
	return nil
}

// FromEnv builds the environment layer from STOCKADE_<KEY> variables in
// env (os.Environ()). Path lists (RO, RW, PROTECT, MASK, UNMASK) are
// colon-separated, STOCKADE_ENV is comma-separated, an empty variable counts
// as unset, and relative ro/rw/workdir paths are relative to cwd. Other
// STOCKADE_* variables are ignored: tests and the sandbox use some.
func FromEnv(env []string, cwd string) (Layer, error) {
	vals := map[string]string{}
	for _, kv := range env {
		if name, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "STOCKADE_") {
			vals[name] = v
		}
	}
	l := Layer{Kind: KindEnv, Source: "env"}
	for _, key := range fileKeys {
		v := vals[envName(key)]
		if v == "" {
			continue
		}
		r := ref{kind: KindEnv, key: key}
		if !isList(key) {
			if err := l.set(r, v, strconv.Quote(v), cwd); err != nil {
				return Layer{}, err
			}
			continue
		}
		sep := ":"
		if key == "env" || key == "agent_allow" || key == "agent_block" || key == "upstream" {
			sep = ","
		}
		for _, e := range strings.Split(v, sep) {
			if e == "" {
				continue
			}
			if err := l.add(r, e, strconv.Quote(e), cwd); err != nil {
				return Layer{}, err
			}
		}
	}
	return l, nil
}

// Flags holds the policy flags as the command line gave them; nil means the
// flag was not given. List flags are repeatable and are not split.
type Flags struct {
	RO, RW, Protect, Mask, Unmask, Env             []string
	AgentAllow, AgentBlock                         []string // as written: Layer parses them
	AllowHooks, SharedHome, GitConfig              *bool
	Memory, CPUs, Pids, LogLevel, Workdir, Network *string
	AgentPolicy, Resolver                          *string
	Terminal                                       *string
}

// FromFlags builds the flag layer. Values are parsed like config values and
// errors name the flag (`flag --memory: "lots" is not a size; …`); relative
// ro/rw/workdir paths are relative to cwd.
func FromFlags(f Flags, cwd string) (Layer, error) {
	l := Layer{Kind: KindFlag, Source: "flag", AllowHooks: f.AllowHooks, SharedHome: f.SharedHome, GitConfig: f.GitConfig}
	scalars := []struct {
		key string
		v   *string
	}{
		{"workdir", f.Workdir}, {"memory", f.Memory}, {"cpus", f.CPUs},
		{"pids", f.Pids}, {"log_level", f.LogLevel}, {"network", f.Network},
		{"agent_policy", f.AgentPolicy}, {"resolver", f.Resolver},
		{"terminal", f.Terminal},
	}
	for _, s := range scalars {
		if s.v == nil {
			continue
		}
		r := ref{kind: KindFlag, key: s.key}
		if err := l.set(r, *s.v, strconv.Quote(*s.v), cwd); err != nil {
			return Layer{}, err
		}
	}
	lists := []struct {
		key string
		vs  []string
	}{
		{"ro", f.RO}, {"rw", f.RW}, {"protect", f.Protect},
		{"mask", f.Mask}, {"unmask", f.Unmask}, {"env", f.Env},
		{"agent_allow", f.AgentAllow}, {"agent_block", f.AgentBlock},
	}
	for _, ls := range lists {
		r := ref{kind: KindFlag, key: ls.key}
		for _, e := range ls.vs {
			if err := l.add(r, e, strconv.Quote(e), cwd); err != nil {
				return Layer{}, err
			}
		}
	}
	return l, nil
}
