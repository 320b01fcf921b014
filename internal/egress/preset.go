package egress

import (
	"fmt"
	"sort"
	"strings"
)

// Preset is a named set of allow rules: the hosts one ecosystem's standard
// client needs to fetch packages (registry, CDN, checksum database), written
// `@name` wherever a rule is (`--agent-allow @npm`, `agent_allow` in a config
// file, `stockade network agent allow -s ID @npm`). ParseRules expands it;
// the rules are then ordinary rules, decided like any other.
type Preset struct {
	Name   string // without the @
	Client string // the clients the hosts are for
	Hosts  []PresetHost
}

// PresetHost is one rule of a preset and why the client needs it.
type PresetHost struct {
	Rule string // as a user writes it; ParseRule must accept it
	Why  string
	// Loosening, when set, says why allowing this host opens more than
	// package downloads: it accepts uploads with any account's token (an
	// agent handed one by an injected prompt can carry data out), or it
	// serves files anyone can publish. Every report of loosenings prints
	// it (LoosenedBy), whether the host came from a preset or not.
	Loosening string
}

// Loosenings shared by several hosts.
const (
	looseUpload  = "accepts uploads with any account's token: data can leave through it"
	looseAnyones = "serves files anyone can publish: content an attacker wrote comes in through it"
	looseBucket  = "Google Cloud Storage: serves and, with any account's credentials, accepts anyone's files: data can leave through it"
)

// presets is the table of every preset. HTTPS hosts are allowed on 443
// only: the clients use nothing else. Kept sorted by name.
var presets = []Preset{
	{Name: "crates", Client: "cargo (sparse index)", Hosts: []PresetHost{
		{Rule: "index.crates.io:443", Why: "the sparse index: config.json and one file of versions per crate"},
		{Rule: "static.crates.io:443", Why: "the .crate downloads (the index's config.json names it as dl)"},
		// crates.io itself (the web API) is left out: cargo fetch and build
		// do not use it; cargo search and publish do, and publish is upload.
	}},
	{Name: "debian", Client: "apt", Hosts: []PresetHost{
		{Rule: "deb.debian.org:80", Why: "the default mirror of sources.list; apt fetches over plain HTTP and checks signatures itself"},
		{Rule: "deb.debian.org:443", Why: "the same mirror when sources.list says https"},
		{Rule: "security.debian.org:80", Why: "security updates in older sources.list files (bookworm names deb.debian.org/debian-security)"},
		{Rule: "security.debian.org:443", Why: "the same over https"},
	}},
	{Name: "github", Client: "git over HTTPS, gh, curl of releases and raw files", Hosts: []PresetHost{
		{Rule: "github.com:443", Why: "git clone and fetch over HTTPS, release and archive URLs (which redirect)",
			Loosening: "git push and gists: " + looseUpload},
		{Rule: "api.github.com:443", Why: "the REST API: gh, and tools that look up releases",
			Loosening: "creates issues, gists, files: " + looseUpload},
		{Rule: "codeload.github.com:443", Why: "archive tarballs and zips (github.com/…/archive redirects here)",
			Loosening: "any repository's archive: " + looseAnyones},
		{Rule: "raw.githubusercontent.com:443", Why: "raw files of any repository (install scripts, configs)",
			Loosening: looseAnyones},
		{Rule: "objects.githubusercontent.com:443", Why: "release assets, where older redirects from github.com lead",
			Loosening: looseAnyones},
		{Rule: "release-assets.githubusercontent.com:443", Why: "release assets, where github.com/…/releases/download redirects since 2025",
			Loosening: looseAnyones},
	}},
	{Name: "go", Client: "the go command (GOPROXY and GOSUMDB defaults)", Hosts: []PresetHost{
		{Rule: "proxy.golang.org:443", Why: "the module proxy: lists, .info, .mod and .zip of modules and of toolchains"},
		{Rule: "sum.golang.org:443", Why: "the checksum database every first download of a module is checked against"},
		{Rule: "storage.googleapis.com:443", Why: "proxy.golang.org answers many .zip requests with a redirect to a signed URL here",
			Loosening: looseBucket},
	}},
	{Name: "maven", Client: "Maven and Gradle (Maven Central)", Hosts: []PresetHost{
		{Rule: "repo.maven.apache.org:443", Why: "Maven Central as Maven 3 and Gradle's mavenCentral() name it"},
		{Rule: "repo1.maven.org:443", Why: "Maven Central as older POMs, settings and tools name it"},
	}},
	{Name: "npm", Client: "npm, and yarn and pnpm with their default registry", Hosts: []PresetHost{
		{Rule: "registry.npmjs.org:443", Why: "packuments, tarballs (served from the same host) and npm audit",
			Loosening: "npm publish: " + looseUpload},
	}},
	{Name: "pypi", Client: "pip, uv, poetry", Hosts: []PresetHost{
		{Rule: "pypi.org:443", Why: "the simple index (/simple/) and the JSON API; uploads go to upload.pypi.org, left out"},
		{Rule: "files.pythonhosted.org:443", Why: "the wheels and sdists the index links to"},
	}},
	{Name: "rubygems", Client: "gem and bundler", Hosts: []PresetHost{
		{Rule: "rubygems.org:443", Why: "the API and the .gem downloads",
			Loosening: "gem push: " + looseUpload},
		{Rule: "index.rubygems.org:443", Why: "the compact index (/versions, /info/NAME) bundler resolves with"},
	}},
}

// PresetPrefix marks a preset where a rule is written.
const PresetPrefix = "@"

// Presets returns the presets, sorted by name.
func Presets() []Preset { return presets }

// presetNames is "@crates, @debian, …" for error lines.
func presetNames() string {
	var names []string
	for _, p := range presets {
		names = append(names, PresetPrefix+p.Name)
	}
	return strings.Join(names, ", ")
}

// LookupPreset returns the preset written s ("@npm"), if there is one.
func LookupPreset(s string) (Preset, bool) {
	name, ok := strings.CutPrefix(strings.TrimSpace(s), PresetPrefix)
	if !ok {
		return Preset{}, false
	}
	i := sort.Search(len(presets), func(i int) bool { return presets[i].Name >= strings.ToLower(name) })
	if i < len(presets) && presets[i].Name == strings.ToLower(name) {
		return presets[i], true
	}
	return Preset{}, false
}

// Rules returns the preset's rules.
func (p Preset) Rules() []Rule {
	out := make([]Rule, 0, len(p.Hosts))
	for _, h := range p.Hosts {
		r, err := ParseRule(h.Rule)
		if err != nil {
			panic("egress: preset @" + p.Name + ": " + err.Error()) // TestPresets keeps the table valid
		}
		out = append(out, r)
	}
	return out
}

// ParseRules parses what a user writes where a rule goes: a preset (@npm)
// expands to its rules, anything else is one rule by ParseRule. An unknown
// preset is refused with the list of known ones. The policy and the session
// call it for every rule, so that a preset works wherever a rule does.
func ParseRules(s string) ([]Rule, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, PresetPrefix) {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		return []Rule{r}, nil
	}
	p, ok := LookupPreset(t)
	if !ok {
		return nil, fmt.Errorf("%q %w: no such preset; write one of %s", s, ErrInvalidRule, presetNames())
	}
	return p.Rules(), nil
}

// LoosenedBy says why allowing r opens more than package downloads: r names
// (or, as a wildcard, covers) a host a preset marks as a loosening. The
// answer is the same whether r came from a preset or was written by hand.
func LoosenedBy(r Rule) (host, why string) {
	for _, p := range presets {
		for i, pr := range p.Rules() {
			h := p.Hosts[i]
			if h.Loosening == "" {
				continue
			}
			name := pr.Name
			switch {
			case r.Kind == KindName && r.Name == name,
				r.Kind == KindWildcard && strings.HasSuffix(name, "."+r.Name):
				return name, h.Loosening
			}
		}
	}
	return "", ""
}
