package egress

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Mode is what happens to a destination no rule names.
type Mode string

// Modes. Neither lifts the floor (see the floor in floor.go).
const (
	ModeDeny  Mode = "deny"  // only what an allow rule names
	ModeAllow Mode = "allow" // every public destination
)

// ParseMode parses "deny" or "allow".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeDeny, ModeAllow:
		return m, nil
	}
	return "", fmt.Errorf("parsing network mode %q: want %q or %q", s, ModeDeny, ModeAllow)
}

// ListKind says which list an Entry is on.
type ListKind string

// The two lists.
const (
	ListAllow ListKind = "allow"
	ListBlock ListKind = "block"
)

// Entry is one rule on one list, as List returns it.
type Entry struct {
	List ListKind
	Rule Rule
}

// Rules is a session's network policy, changed at runtime by the control API
// and read by every new connection and DNS question. It is safe for
// concurrent use: writers copy the lists and publish a new Snapshot, so a
// decision always sees one consistent version, and a change applies to every
// connection opened after it returns (connections already open stay open).
type Rules struct {
	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[Snapshot]
}

// Snapshot is one immutable version of the rules.
type Snapshot struct {
	mode  Mode
	allow []Rule
	block []Rule
}

// NewRules returns rules with the given mode and lists. A mode other than
// ModeAllow is taken as ModeDeny: a typo must not open the network.
// Duplicates and invalid (zero) rules are dropped.
func NewRules(mode Mode, allow, block []Rule) *Rules {
	if mode != ModeAllow {
		mode = ModeDeny
	}
	s := &Snapshot{mode: mode}
	for _, r := range allow {
		s.allow = addRule(s.allow, r)
	}
	for _, r := range block {
		s.block = addRule(s.block, r)
	}
	rs := &Rules{}
	rs.snap.Store(s)
	return rs
}

// Snapshot returns the current version of the rules.
func (rs *Rules) Snapshot() *Snapshot { return rs.snap.Load() }

// Allow adds r to the allowlist and removes a block entry equal to r: of two
// commands naming exactly the same target, the later wins. A broader block
// rule (*.example.com against allow a.example.com) still wins. It reports
// whether anything changed.
func (rs *Rules) Allow(r Rule) bool {
	return rs.update(func(s *Snapshot) {
		s.allow = addRule(s.allow, r)
		s.block = removeRule(s.block, r)
	})
}

// Block adds r to the blocklist and removes an allow entry equal to r.
func (rs *Rules) Block(r Rule) bool {
	return rs.update(func(s *Snapshot) {
		s.block = addRule(s.block, r)
		s.allow = removeRule(s.allow, r)
	})
}

// Reset removes target from both lists. It reports whether anything changed.
func (rs *Rules) Reset(target Rule) bool {
	return rs.update(func(s *Snapshot) {
		s.allow = removeRule(s.allow, target)
		s.block = removeRule(s.block, target)
	})
}

// SetMode changes the mode.
func (rs *Rules) SetMode(m Mode) bool {
	if m != ModeAllow {
		m = ModeDeny
	}
	return rs.update(func(s *Snapshot) { s.mode = m })
}

// List returns every rule, allow entries first, each list sorted by kind
// (names, wildcards, IPs, CIDRs) and then by text.
func (rs *Rules) List() []Entry { return rs.Snapshot().List() }

func (rs *Rules) update(change func(*Snapshot)) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	old := rs.snap.Load()
	s := &Snapshot{mode: old.mode, allow: slices.Clone(old.allow), block: slices.Clone(old.block)}
	change(s)
	if s.mode == old.mode && slices.Equal(s.allow, old.allow) && slices.Equal(s.block, old.block) {
		return false
	}
	rs.snap.Store(s)
	return true
}

func addRule(list []Rule, r Rule) []Rule {
	if r.Kind == 0 || slices.Contains(list, r) {
		return list
	}
	return append(list, r)
}

func removeRule(list []Rule, r Rule) []Rule {
	return slices.DeleteFunc(list, func(x Rule) bool { return x == r })
}

// Mode returns the snapshot's mode.
func (s *Snapshot) Mode() Mode { return s.mode }

// List returns the snapshot's rules, sorted as Rules.List.
func (s *Snapshot) List() []Entry {
	var out []Entry
	for _, l := range []struct {
		kind  ListKind
		rules []Rule
	}{{ListAllow, s.allow}, {ListBlock, s.block}} {
		sorted := slices.Clone(l.rules)
		slices.SortFunc(sorted, func(a, b Rule) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.String(), b.String()))
		})
		for _, r := range sorted {
			out = append(out, Entry{List: l.kind, Rule: r})
		}
	}
	return out
}

// blockedName returns the first block rule matching name at port.
func (s *Snapshot) blockedName(name string, port uint16) (Rule, bool) {
	return find(s.block, func(r Rule) bool { return r.matchName(name) && r.portMatches(port, false) })
}

// allowedName returns the first allow rule matching name at port.
func (s *Snapshot) allowedName(name string, port uint16) (Rule, bool) {
	return find(s.allow, func(r Rule) bool { return r.matchName(name) && r.portMatches(port, true) })
}

// blockedAddr returns the first block rule matching the unmapped address.
func (s *Snapshot) blockedAddr(a netip.AddrPort) (Rule, bool) {
	return find(s.block, func(r Rule) bool { return r.matchAddr(a.Addr()) && r.portMatches(a.Port(), false) })
}

// allowedAddr returns the first IP or CIDR allow rule matching the address.
func (s *Snapshot) allowedAddr(a netip.AddrPort) (Rule, bool) {
	return find(s.allow, func(r Rule) bool { return r.matchAddr(a.Addr()) && r.portMatches(a.Port(), true) })
}

func find(list []Rule, match func(Rule) bool) (Rule, bool) {
	for _, r := range list {
		if match(r) {
			return r, true
		}
	}
	return Rule{}, false
}
