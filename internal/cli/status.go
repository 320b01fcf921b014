package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/seccomp"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

// layer is one enforcement layer and whether it is active on this machine.
type layer struct {
	Name   string `json:"name"`
	Active bool   `json:"active"`
	Detail string `json:"detail"`
}

// enforcement is what run prints at start, doctor checks and policy show
// --json reports: the same list in all three places.
type enforcement struct {
	Layers     []layer  `json:"layers"`
	Downgrades []string `json:"downgrades"`
	Loosenings []string `json:"loosenings"`
}

// floorLifted is what a LOOSENED line says of an allow rule that
// egress.Rule.LiftsFloor reports.
const floorLifted = "lifts the floor for the private, loopback, link-local or metadata addresses it covers"

// pidsLimit says how the pids limit of r is enforced. For a user other than
// root it is RLIMIT_NPROC in the sandbox's own user namespace (see
// sandbox.ExecSpec.MaxProcs): per sandbox, unprivileged, and free of the
// cgroup migration that costs milliseconds at every start. The kernel exempts
// host root from RLIMIT_NPROC, so for root a pids limit set on purpose goes to
// a cgroup, and the default one is reported as not enforced.
type pidsLimit struct {
	rlimit, cgroup int64
	problem        string
}

func pidsOf(r policy.Resolved) pidsLimit {
	p := r.Policy.Pids
	switch {
	case p == 0:
		return pidsLimit{}
	case os.Getuid() != 0:
		return pidsLimit{rlimit: p}
	case r.Sources["pids"] != policy.SourceDefault:
		return pidsLimit{cgroup: p}
	}
	return pidsLimit{problem: fmt.Sprintf("default pids limit %d NOT enforced: the kernel exempts root from RLIMIT_NPROC; fix: run as your user, or pass --pids %d to enforce it with a cgroup", p, p)}
}

// limitsOf are the limits enforced with cgroups.
func limitsOf(r policy.Resolved) cgroup.Limits {
	return cgroup.Limits{Memory: r.Policy.Memory, CPUs: r.Policy.CPUs, Pids: pidsOf(r).cgroup}
}

// requirements are the limits of r set on purpose (a flag, a STOCKADE_*
// variable, a config file): each must be enforced or the start fails. A
// default limit that cannot be enforced is only a warning.
func requirements(r policy.Resolved) []cgroup.Requirement {
	var reqs []cgroup.Requirement
	for _, key := range []string{"memory", "cpus", "pids"} {
		if undo := r.Undo(key); undo != "" {
			reqs = append(reqs, cgroup.Requirement{Limit: key, Source: r.Sources[key], Undo: undo})
		}
	}
	return reqs
}

// checkLimits refuses a start early, before anything is made, when a limit
// set on purpose cannot be enforced here. Without one it probes nothing.
func checkLimits(r policy.Resolved) error {
	reqs := requirements(r)
	if len(reqs) == 0 {
		return nil
	}
	return cgroup.Probe(limitsOf(r)).Refusal(reqs)
}

// enforcementOf describes r on this machine; cg is the cgroup report (from
// cgroup.New when starting, cgroup.Probe otherwise).
func enforcementOf(r policy.Resolved, home string, cg cgroup.Report) enforcement {
	abi := landlock.ABI()
	e := enforcement{Loosenings: r.Warnings(home, os.Getuid())}
	if keeps, why := sandbox.KeepsMemory(); keeps {
		e.Loosenings = append(e.Loosenings, "sandbox init keeps a copy of stockade's memory, the auth proxy's keys among it ("+why+"); build with CGO_ENABLED=0 (README, Quick start)")
	}
	for _, rule := range r.Policy.AgentAllow {
		if r.Policy.Network != "proxy" {
			break
		}
		if rule.LiftsFloor() {
			e.Loosenings = append(e.Loosenings, fmt.Sprintf("agent_allow %s: %s", rule, floorLifted))
		}
		if _, why := egress.LoosenedBy(rule); why != "" {
			from := ""
			if p := r.Preset("agent_allow", rule); p != "" {
				from = " (preset " + p + ")"
			}
			e.Loosenings = append(e.Loosenings, fmt.Sprintf("agent_allow %s%s: %s", rule, from, why))
		}
	}
	e.Layers = append(e.Layers,
		layer{"namespaces", true, "user,mount,pid,net,ipc,uts,cgroup"},
		layer{"landlock", landlock.CheckABI(abi) == nil, fmt.Sprintf("ABI %d", abi)},
		layer{"seccomp", true, fmt.Sprintf("%d rules, EPERM", seccomp.SandboxLen())},
		layer{"no_new_privs", true, "set"},
		layer{"capabilities", true, "none"},
		layer{"network", true, networkDetail(r.Policy)},
	)
	e.Downgrades = append(e.Downgrades, landlock.StatusFor(abi).Downgrades...)
	enforced := cg.Enforced
	pids := pidsOf(r)
	if pids.rlimit > 0 {
		enforced = append(enforced, fmt.Sprintf("pids %d (RLIMIT_NPROC in the sandbox's user namespace)", pids.rlimit))
	}
	if pids.problem != "" {
		e.Downgrades = append(e.Downgrades, pids.problem)
	}
	if len(enforced) > 0 {
		e.Layers = append(e.Layers, layer{"limits", true, strings.Join(enforced, ", ")})
	}
	for _, p := range cg.NotEnforced {
		line := fmt.Sprintf("default %s limit NOT enforced", p.Limit)
		if src := r.Sources[p.Limit]; src != policy.SourceDefault {
			line = fmt.Sprintf("%s limit NOT enforced, so run refuses to start (set by %s)", p.Limit, src)
		}
		e.Downgrades = append(e.Downgrades, fmt.Sprintf("%s: %s; fix: %s", line, p.Reason, p.Fix))
	}
	return e
}

// line renders the layers as the one-line summary printed at start.
func (e enforcement) line() string {
	var parts []string
	for _, l := range e.Layers {
		if l.Active {
			parts = append(parts, l.Name+" "+l.Detail)
		} else {
			parts = append(parts, l.Name+" OFF ("+l.Detail+")")
		}
	}
	return strings.Join(parts, "; ")
}

// print writes the layers one per line, then every downgrade and loosening:
// the same list policy show and doctor print, and run sums up in one line.
func (e enforcement) print(w io.Writer) {
	fmt.Fprintln(w, "enforcement on this machine:")
	for _, l := range e.Layers {
		state := "on "
		if !l.Active {
			state = "OFF"
		}
		fmt.Fprintf(w, "  %s  %-13s %s\n", state, l.Name, termfilter.Visible(l.Detail))
	}
	for _, d := range e.Downgrades {
		fmt.Fprintf(w, "  warning: %s\n", termfilter.Visible(d))
	}
	for _, l := range e.Loosenings {
		fmt.Fprintf(w, "  LOOSENED: %s\n", termfilter.Visible(l))
	}
}

// networkDetail sums up the network policy for the start line.
func networkDetail(p policy.Policy) string {
	if p.Network != "proxy" {
		return p.Network + " (loopback only)"
	}
	d := "proxy, agent policy " + p.AgentPolicy
	if n := len(p.AgentAllow); n > 0 {
		d += fmt.Sprintf(", %d allowed", n)
	}
	if n := len(p.AgentBlock); n > 0 {
		d += fmt.Sprintf(", %d blocked", n)
	}
	return d
}
