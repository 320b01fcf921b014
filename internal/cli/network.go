package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/stockade-dev/stockade/internal/session"
)

type networkCmd struct {
	Agent networkAgentCmd `cmd:"" help:"Change the egress rules of a running session."`
	List  networkListCmd  `cmd:"" help:"List the egress rules of a running session."`
}

type networkAgentCmd struct {
	Allow networkAllowCmd `cmd:"" help:"Allow TARGET (a name, *.suffix, IP or CIDR, with an optional :port, or a preset such as @npm) for new connections."`
	Block networkBlockCmd `cmd:"" help:"Block TARGET (wins over allow)."`
	Reset networkResetCmd `cmd:"" help:"Remove TARGET from the allow and block rules."`
}

type networkAllowCmd struct{ networkChangeCmd }
type networkBlockCmd struct{ networkChangeCmd }
type networkResetCmd struct{ networkChangeCmd }

func (c *networkAllowCmd) Run() error { return c.change(session.NetAllow) }
func (c *networkBlockCmd) Run() error { return c.change(session.NetBlock) }
func (c *networkResetCmd) Run() error { return c.change(session.NetReset) }

type networkChangeCmd struct {
	sessionFlag
	Target string `arg:"" help:"HOST, *.SUFFIX, IP or CIDR, with an optional :PORT, or a preset (@npm, @pypi, @go, @crates, @rubygems, @maven, @debian, @github)." placeholder:"TARGET[:PORT]"`
}

type networkListCmd struct {
	sessionFlag
}

func (c *networkChangeCmd) change(action string) error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	return printRules(store, id, session.Request{Op: session.OpNetwork, Action: action, Target: c.Target})
}

func (c *networkListCmd) Run() error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	return printRules(store, id, session.Request{Op: session.OpNetwork, Action: session.NetList})
}

func printRules(store session.Store, id string, req session.Request) error {
	conn, _, resp, err := session.Dial(store, id, req)
	if err != nil {
		return err
	}
	conn.Close()
	if v := resp.Network; v != nil {
		what := "a connection or name that no allow rule matches is refused"
		if v.AgentPolicy != "deny" {
			what = "every public address goes out but what a block rule matches"
		}
		fmt.Printf("network %s, agent policy %s: %s\n", v.Mode, v.AgentPolicy, what)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "LIST\tRULE")
	for _, r := range resp.Rules {
		switch {
		case r.LiftsFloor:
			fmt.Fprintf(w, "%s\t%s\tLOOSENED: %s\n", r.List, r.Rule, floorLifted)
		case r.Loosening != "":
			fmt.Fprintf(w, "%s\t%s\tLOOSENED: %s\n", r.List, r.Rule, r.Loosening)
		default:
			fmt.Fprintf(w, "%s\t%s\n", r.List, r.Rule)
		}
	}
	if len(resp.Rules) == 0 {
		fmt.Fprintln(w, "-\t(no rules)")
	}
	if resp.Network != nil {
		for _, r := range resp.Network.Implicit {
			fmt.Fprintf(w, "implicit\t%s\t%s\n", r.Addr, r.What)
		}
	}
	return w.Flush()
}
