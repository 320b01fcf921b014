package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stockade-dev/stockade/internal/egress"
)

// Registry is an image registry the engine may pull from
// (--registry-allow): its HOST[:PORT], and whether it speaks plain HTTP.
type Registry struct {
	Host     string `json:"host"`
	Insecure bool   `json:"insecure,omitempty"`
}

// registryFix ends every error of ParseRegistry.
const registryFix = `write HOST or HOST:PORT (HTTPS), or http://HOST:PORT for a registry that speaks plain HTTP`

// ParseRegistry reads one --registry-allow value: HOST[:PORT] for a
// registry on HTTPS (port 443 unless given), http://HOST[:PORT] for one
// on plain HTTP (port 80 unless given), which the engine's
// registries.conf then marks insecure.
func ParseRegistry(s string) (Registry, error) {
	bad := func(why string) (Registry, error) {
		return Registry{}, fmt.Errorf("%q is not a registry: %s; %s", s, why, registryFix)
	}
	r := Registry{Host: s}
	if rest, ok := strings.CutPrefix(s, "http://"); ok {
		r = Registry{Host: rest, Insecure: true}
	}
	if r.Host == "" || strings.ContainsAny(r.Host, "/*@ ") || strings.Contains(r.Host, "://") {
		return bad("not a host with an optional port")
	}
	rule, err := egress.ParseRule(r.Host)
	if err != nil {
		var why string
		if errors.Is(err, egress.ErrInvalidRule) {
			why = "not a host with an optional port"
		} else {
			why = err.Error()
		}
		return bad(why)
	}
	if rule.Kind != egress.KindName && rule.Kind != egress.KindIP {
		return bad("a " + rule.Kind.String() + ", not a host")
	}
	return r, nil
}

// Rule is the registry proxy's allow rule for r: its host on its port.
func (r Registry) Rule() egress.Rule {
	rule, _ := egress.ParseRule(r.Host) // parsed before: ParseRegistry
	if rule.Port == 0 {
		rule.Port = 443
		if r.Insecure {
			rule.Port = 80
		}
	}
	return rule
}

func (r Registry) String() string {
	if r.Insecure {
		return "http://" + r.Host
	}
	return r.Host
}
