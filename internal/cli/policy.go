package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/stockade-dev/stockade/internal/cgroup"
)

type policyCmd struct {
	Show policyShowCmd `cmd:"" help:"Print the effective policy, each value with where it came from."`
}

type policyShowCmd struct {
	policyFlags
	JSON bool `name:"json" help:"Print JSON: policy, sources and the enforcement layers of this machine."`
}

func (c *policyShowCmd) Run() error {
	r, home, err := c.resolve()
	if err != nil {
		return err
	}
	e := enforcementOf(r, home, cgroup.Probe(limitsOf(r)))
	if c.JSON {
		out := struct {
			Policy      any         `json:"policy"`
			Sources     any         `json:"sources"`
			ListSources any         `json:"list_sources"`
			Enforcement enforcement `json:"enforcement"`
		}{r.Policy, r.Sources, r.ListSources, e}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Print(r.Text())
	fmt.Println()
	e.print(os.Stdout)
	return nil
}
