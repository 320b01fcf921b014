package cli

import (
	"fmt"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
)

// containerFlags are run's flags of the container engine.
type containerFlags struct {
	Containers        bool     `help:"Give the sandbox a container engine (podman's API, for the docker and podman clients; DOCKER_HOST and CONTAINER_HOST point at it), inside the sandbox's walls. Needs podman and subordinate ids."`
	PodPolicy         *string  `name:"pod-policy" help:"The containers' egress, with --containers: unset, the agent's policy and rules plus --pod-allow and --pod-block; deny, only --pod-allow; allow, every public address but --pod-block (loosening)." placeholder:"deny|allow"`
	PodAllow          []string `name:"pod-allow" sep:"," help:"With --containers: let the containers reach HOST, *.SUFFIX, IP or CIDR, with an optional :PORT, or a preset; repeatable or comma-separated." placeholder:"RULE"`
	PodBlock          []string `name:"pod-block" sep:"," help:"With --containers: block a host, wildcard, IP or CIDR for the containers (wins over allow); repeatable or comma-separated." placeholder:"RULE"`
	RequireDigest     bool     `name:"require-digest" help:"With --containers: refuse a container whose image is not named by digest (NAME@sha256:...)."`
	ContainersStorage *string  `name:"containers-storage" help:"With --containers: where the engine keeps images, containers and build cache: project (the default, but with --require-digest), a directory of this project's on the host, kept between sessions (one session at a time uses it; another gets a session one); session (the default with --require-digest), a tmpfs that ends with the session." placeholder:"project|session"`
	RegistryAllow     []string `name:"registry-allow" sep:"," help:"With --containers: let the engine pull images from this registry (HOST[:PORT] on HTTPS, http://HOST[:PORT] on plain HTTP), through a proxy of its own that lets out nothing else; the command's own traffic is not let out there. Loosening: the engine can push there too. Repeatable or comma-separated." placeholder:"REGISTRY"`
}

// engineSettings are the engine's flags, parsed.
type engineSettings struct {
	pod        job.PodPolicy
	registries []engine.Registry
	loosened   []string // the loosenings they add
	store      bool     // the project's storage, kept between sessions (--containers-storage)
}

// parse reads the flags, before anything is made: a bad value, or a flag
// of the engine without --containers, is a usage error.
func (f containerFlags) parse(p policy.Policy) (engineSettings, error) {
	var es engineSettings
	if !f.Containers {
		for _, g := range []struct {
			name string
			set  bool
		}{
			{"--pod-policy", f.PodPolicy != nil}, {"--pod-allow", len(f.PodAllow) > 0},
			{"--pod-block", len(f.PodBlock) > 0}, {"--registry-allow", len(f.RegistryAllow) > 0},
			{"--require-digest", f.RequireDigest},
			{"--containers-storage", f.ContainersStorage != nil},
		} {
			if g.set {
				return es, usageError{fmt.Errorf("%s is a setting of the container engine; add --containers", g.name)}
			}
		}
		return es, nil
	}
	// With --require-digest, the session's own storage unless asked
	// otherwise: the hook trusts the engine's records for the image's
	// reference, and a kept storage holds records an engine of an earlier
	// session wrote, which an agent that took that engine over could have
	// written as it liked.
	es.store = !f.RequireDigest
	if f.ContainersStorage != nil {
		switch *f.ContainersStorage {
		case "project":
			es.store = true
			if f.RequireDigest {
				es.loosened = append(es.loosened, "containers_storage project with require_digest: the image references the hook checks are the engine's records, which an engine of an earlier session of this project wrote")
			}
		case "session":
			es.store = false
		default:
			return es, usageError{fmt.Errorf("flag --containers-storage: %q is not a storage; write project or session", *f.ContainersStorage)}
		}
	}
	if f.PodPolicy != nil {
		if _, err := egress.ParseMode(*f.PodPolicy); err != nil {
			return es, usageError{fmt.Errorf("flag --pod-policy: %q is not a policy; write deny or allow", *f.PodPolicy)}
		}
		es.pod.Policy = *f.PodPolicy
		if es.pod.Policy == string(egress.ModeAllow) && p.Network == "proxy" {
			es.loosened = append(es.loosened, "pod_policy allow: the engine's containers reach every public address but what --pod-block names, and a container can read the workdir")
		}
	}
	for _, l := range []struct {
		flag string
		in   []string
		out  *[]egress.Rule
	}{{"--pod-allow", f.PodAllow, &es.pod.Allow}, {"--pod-block", f.PodBlock, &es.pod.Block}} {
		for _, s := range l.in {
			rules, err := egress.ParseRules(s)
			if err != nil {
				return es, usageError{fmt.Errorf("flag %s: %w", l.flag, err)}
			}
			*l.out = append(*l.out, rules...)
		}
	}
	for _, rule := range es.pod.Allow {
		if p.Network != "proxy" {
			break
		}
		if rule.LiftsFloor() {
			es.loosened = append(es.loosened, fmt.Sprintf("pod_allow %s: %s", rule, floorLifted))
		}
		if _, why := egress.LoosenedBy(rule); why != "" {
			es.loosened = append(es.loosened, fmt.Sprintf("pod_allow %s: %s", rule, why))
		}
	}
	for _, s := range f.RegistryAllow {
		r, err := engine.ParseRegistry(s)
		if err != nil {
			return es, usageError{fmt.Errorf("flag --registry-allow: %w", err)}
		}
		es.registries = append(es.registries, r)
		if p.Network == "proxy" && r.Rule().LiftsFloor() {
			es.loosened = append(es.loosened, fmt.Sprintf("registry_allow %s: %s", r, floorLifted))
		}
		if p.Network == "proxy" {
			es.loosened = append(es.loosened, fmt.Sprintf("registry_allow %s: the engine can push to it as well as pull, and an image pushed there can carry the workdir out; it also fetches any URL on that host for a build's ADD or an import", r))
		}
	}
	return es, nil
}
