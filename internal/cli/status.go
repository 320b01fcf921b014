package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/seccomp"
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

func limitsOf(p policy.Policy) cgroup.Limits {
	return cgroup.Limits{Memory: p.Memory, CPUs: p.CPUs, Pids: p.Pids}
}

// enforcementOf describes r on this machine; cg is the cgroup report (from
// cgroup.New when starting, cgroup.Probe otherwise).
func enforcementOf(r policy.Resolved, home string, cg cgroup.Report) enforcement {
	abi := landlock.ABI()
	e := enforcement{Loosenings: r.Warnings(home, os.Getuid())}
	e.Layers = append(e.Layers,
		layer{"namespaces", true, "user,mount,pid,net,ipc,uts,cgroup"},
		layer{"landlock", landlock.CheckABI(abi) == nil, fmt.Sprintf("ABI %d", abi)},
		layer{"seccomp", true, fmt.Sprintf("%d rules, EPERM", seccomp.Default().Len())},
		layer{"no_new_privs", true, "set"},
		layer{"capabilities", true, "none"},
		layer{"network", true, r.Policy.Network},
	)
	e.Downgrades = append(e.Downgrades, landlock.StatusFor(abi).Downgrades...)
	if len(cg.Enforced) > 0 {
		e.Layers = append(e.Layers, layer{"limits", true, strings.Join(cg.Enforced, ", ")})
	}
	for _, p := range cg.NotEnforced {
		e.Downgrades = append(e.Downgrades, fmt.Sprintf("%s limit NOT enforced: %s; fix: %s", p.Limit, p.Reason, p.Fix))
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
