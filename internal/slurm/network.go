package slurm

import "github.com/stockade-dev/stockade/internal/egress"

// NetworkArgs are the flags of `stockade run` that give a job the egress
// rules of snap: its mode, allow and block lists.
func NetworkArgs(snap *egress.Snapshot) []string {
	a := []string{"--agent-policy", string(snap.Mode())}
	for _, e := range snap.List() {
		flag := "--agent-allow"
		if e.List == egress.ListBlock {
			flag = "--agent-block"
		}
		a = append(a, flag, e.Rule.String())
	}
	return a
}

// SetRules makes every later submission take the session's egress rules
// as they are when it is submitted (a session changes them at runtime:
// `stockade network`), instead of Config.Network, the rules at the start.
func (c *Chaperon) SetRules(rules *egress.Rules) {
	c.mu.Lock()
	c.rules = rules
	c.mu.Unlock()
}

// networkArgs are the egress flags of a job submitted now.
func (c *Chaperon) networkArgs() []string {
	c.mu.Lock()
	rules := c.rules
	c.mu.Unlock()
	if rules == nil {
		return c.cfg.Network
	}
	return NetworkArgs(rules.Snapshot())
}
