package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/stockade-dev/stockade/internal/session"
)

type networkCmd struct {
	Agent networkAgentCmd `cmd:"" help:"Change the egress rules of a running session."`
	Pod   networkPodCmd   `cmd:"" help:"Change or list the egress rules of the containers of a running session's engine (--containers)."`
	List  networkListCmd  `cmd:"" help:"List the egress rules of a running session."`
}

type networkPodCmd struct {
	Allow podAllowCmd `cmd:"" help:"Let the containers reach TARGET (a name, *.suffix, IP or CIDR, with an optional :port, or a preset such as @npm) on new connections."`
	Block podBlockCmd `cmd:"" help:"Block TARGET for the containers (wins over allow)."`
	Reset podResetCmd `cmd:"" help:"Remove TARGET from the containers' allow and block rules."`
	List  podListCmd  `cmd:"" help:"List the containers' egress rules."`
}

type podAllowCmd struct{ networkChangeCmd }
type podBlockCmd struct{ networkChangeCmd }
type podResetCmd struct{ networkChangeCmd }
type podListCmd struct{ sessionFlag }

func (c *podAllowCmd) Run() error { return c.changeIn(session.ScopePod, session.NetAllow) }
func (c *podBlockCmd) Run() error { return c.changeIn(session.ScopePod, session.NetBlock) }
func (c *podResetCmd) Run() error { return c.changeIn(session.ScopePod, session.NetReset) }

func (c *podListCmd) Run() error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	return printRules(store, id, session.Request{Op: session.OpNetwork, Action: session.NetList, Scope: session.ScopePod})
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

func (c *networkChangeCmd) change(action string) error { return c.changeIn(session.ScopeAgent, action) }

func (c *networkChangeCmd) changeIn(scope, action string) error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	return printRules(store, id, session.Request{Op: session.OpNetwork, Action: action, Target: c.Target, Scope: scope})
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
		who, policy := "agent policy", v.AgentPolicy
		if req.Scope == session.ScopePod {
			who, policy = "the containers' policy", v.PodPolicy
		}
		what := "a connection or name that no allow rule matches is refused"
		if policy != "deny" {
			what = "every public address goes out but what a block rule matches"
		}
		fmt.Printf("network %s, %s %s: %s\n", v.Mode, who, policy, what)
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
