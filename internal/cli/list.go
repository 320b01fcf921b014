package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stockade-dev/stockade/internal/session"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

type listCmd struct {
	All  bool `help:"Include sessions that have ended."`
	JSON bool `name:"json" help:"Print JSON."`
}

type listed struct {
	session.Session
	Effective session.State `json:"effective_state"`
}

func (c *listCmd) Run() error {
	all, err := session.NewStore(stateHome(realHome())).List()
	if err != nil {
		return err
	}
	var out []listed
	for _, s := range all {
		eff := s.Effective()
		if c.All || eff == session.Starting || eff == session.Running || eff == session.Restarting || eff == session.Dead {
			out = append(out, listed{s, eff})
		}
	}
	if c.JSON {
		enc := json.NewEncoder(termfilter.JSONWriter(os.Stdout)) // values a project or the sandbox chose: nothing a terminal acts on
		enc.SetIndent("", "  ")
		if out == nil {
			out = []listed{}
		}
		return enc.Encode(out)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tCOMMAND\tWORKDIR\tSTARTED\tPID")
	for _, s := range out {
		state := string(s.Effective)
		if s.ExitCode != nil && !s.Active() {
			state = fmt.Sprintf("%s (%d)", state, *s.ExitCode)
		}
		if s.Foreground {
			state += ", foreground"
		}
		cmd := strings.Join(s.Command, " ")
		if len(cmd) > 40 {
			cmd = cmd[:37] + "..."
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, state, cmd, s.Workdir, s.Started.Local().Format(time.DateTime), s.PID)
	}
	return w.Flush()
}
