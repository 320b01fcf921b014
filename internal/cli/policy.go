package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/termfilter"
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
	rel, err := homeRel("run", r.Policy)
	if err != nil {
		return err
	}
	sandboxHome := filepath.Join(stockadeData(home), rel)
	if c.JSON {
		out := struct {
			Policy      any         `json:"policy"`
			Sources     any         `json:"sources"`
			ListSources any         `json:"list_sources"`
			Home        string      `json:"home"`
			Enforcement enforcement `json:"enforcement"`
		}{r.Policy, r.Sources, r.ListSources, sandboxHome, e}
		enc := json.NewEncoder(termfilter.JSONWriter(os.Stdout)) // values a project or the sandbox chose: nothing a terminal acts on
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	// The values may be a project's (.stockade.json comes with the
	// repository): each line is written out with termfilter.Visible.
	for line := range strings.Lines(r.Text()) {
		fmt.Println(termfilter.Visible(strings.TrimSuffix(line, "\n")))
	}
	kind := "one per project"
	if r.Policy.SharedHome {
		kind = "shared by every project"
	}
	fmt.Printf("\nsandbox HOME  %s  (%s; stockade <agent> has <agent> in place of run)\n", termfilter.Visible(sandboxHome), kind)
	fmt.Println()
	e.print(os.Stdout)
	return nil
}
