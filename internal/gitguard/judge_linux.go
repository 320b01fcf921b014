package gitguard

import (
	"fmt"
	"path"
	"strings"
)

// config judges the config file rel and returns the entries git will read
// from it once the check is done (none if it was moved aside and nothing
// was put back). The files it includes are judged the same way, when they
// are inside the workdir; depth counts the includes on the way.
func (c *checker) config(rel string, depth int) []entry {
	if c.seen["file:"+rel] || depth > maxIncludes {
		return nil
	}
	c.seen["file:"+rel] = true
	real, cur, prev, changed := c.at(rel, true)
	if !c.fileLike(real, cur, prev, changed) {
		return nil
	}
	entries, perr := parseConfig(cur.data)
	if changed {
		var found []Finding
		base := baseline(prev)
		for _, e := range entries {
			if why := judge(e); why != "" && !base[e.String()] {
				found = append(found, Finding{What: e.String(), Why: why})
			}
		}
		if perr != nil {
			found = append(found, Finding{What: perr.Error(), Why: whyBadParse})
		}
		if len(found) > 0 {
			entries = nil
			if c.quarantine(real, prev, found...) {
				entries, _ = parseConfig(prev.data)
			}
		}
	}
	for _, e := range entries {
		section, _, name := e.parts()
		if name == "path" && e.HasValue && (section == "include" || section == "includeif") {
			if t, ok := inside(c.g.workdir, path.Dir(real), e.Value); ok {
				entries = append(entries, c.config(t, depth+1)...)
			}
		}
	}
	return entries
}

// fileLike says whether cur is a regular file whose content can be judged;
// if it is not, and changed, it is quarantined.
func (c *checker) fileLike(rel string, cur, prev *state, changed bool) bool {
	var f Finding
	switch {
	case cur.kind == absent || cur.kind == directory:
		return false
	case cur.kind == symlink:
		f = Finding{What: "a symlink to " + cur.link, Why: whySymlink}
	case cur.kind == other:
		f = Finding{What: "not a regular file", Why: whyNotFile}
	case cur.big:
		f = Finding{What: fmt.Sprintf("a file of %d bytes", cur.size), Why: whyBigFile}
	default:
		return true
	}
	if changed {
		c.quarantine(rel, prev, f)
	}
	return false
}

// baseline is the set of entries a config file held before the session.
func baseline(prev *state) map[string]bool {
	base := map[string]bool{}
	if prev == nil || prev.data == nil {
		return base
	}
	entries, _ := parseConfig(prev.data)
	for _, e := range entries {
		base[e.String()] = true
	}
	return base
}

// commondir checks g/commondir. git takes config, hooks, refs and objects
// from the directory it names. Only a linked worktree's git directory
// (<common>/worktrees/<name>) has one, and it is "../..": anything else
// new is quarantined. What it names inside the workdir is checked too.
func (c *checker) commondir(g string, depth int) {
	rel := join(g, "commondir")
	real, cur, prev, changed := c.at(rel, true)
	if !c.fileLike(real, cur, prev, changed) {
		return
	}
	target, _ := parseCommondir(cur.data)
	dir, in := inside(c.g.workdir, g, target)
	linked := path.Base(path.Dir(g)) == "worktrees" && in && dir == path.Dir(path.Dir(g))
	if changed && !linked {
		c.quarantine(real, prev, Finding{What: fmt.Sprintf("commondir %q", target),
			Why: "git takes the configuration and hooks of the directory it names"})
		return
	}
	if in {
		if d, ok := c.dirAt(dir); ok {
			c.gitdir(d, depth+1)
		}
	}
}

// hooks checks a hooks directory: git runs an executable file there whose
// name is a hook's; any new or changed executable file or symlink is
// quarantined, but for the samples git ships.
func (c *checker) hooks(rel string) {
	if c.g.AllowHooks && !c.recording {
		return
	}
	d, ok := c.subdir(rel)
	if !ok {
		return
	}
	for _, e := range c.list(d) {
		if strings.HasSuffix(e.name, ".sample") || strings.Contains(e.name, QuarantineInfix) || e.kind == directory {
			continue
		}
		p := join(d, e.name)
		cur, prev, changed := c.item(p, true)
		switch {
		case !changed:
		case cur.kind == symlink:
			c.quarantine(p, prev, Finding{What: "a hook that is a symlink to " + cur.link, Why: whyHook})
		case cur.kind == regular && cur.mode&0o111 != 0:
			c.quarantine(p, prev, Finding{What: "an executable hook, new or changed", Why: whyHook})
		}
	}
}

// attributes checks info/attributes for driver names.
func (c *checker) attributes(rel string) {
	c.lines(rel, attributeDrivers, "picks a filter, diff or merge driver, which runs a program")
}

// todo checks a rebase or sequencer todo list for exec lines.
func (c *checker) todo(rel string) {
	c.lines(rel, todoExecs, "git rebase --continue runs it")
}

// lines quarantines the file rel, when it is new or changed, if find picks
// lines out of it, each a finding with why.
func (c *checker) lines(rel string, find func([]byte) []string, why string) {
	real, cur, prev, changed := c.at(rel, true)
	if !c.fileLike(real, cur, prev, changed) || !changed {
		return
	}
	var found []Finding
	for _, l := range find(cur.data) {
		found = append(found, Finding{What: l, Why: why})
	}
	if len(found) > 0 {
		c.quarantine(real, prev, found...)
	}
}

// remotes checks the legacy remote definitions in .git/remotes and
// .git/branches (branches set) for URLs that run a program.
func (c *checker) remotes(rel string, branches bool) {
	d, ok := c.subdir(rel)
	if !ok {
		return
	}
	for _, e := range c.list(d) {
		p := join(d, e.name)
		if e.kind == directory || strings.Contains(e.name, QuarantineInfix) {
			continue
		}
		cur, prev, changed := c.item(p, true)
		if !c.fileLike(p, cur, prev, changed) || !changed {
			continue
		}
		var found []Finding
		for _, u := range remoteURLs(cur.data, branches) {
			if why := checkURL(u); why != "" {
				found = append(found, Finding{What: fmt.Sprintf("URL %q", u), Why: why + ", at fetch and pull"})
			}
		}
		if len(found) > 0 {
			c.quarantine(p, prev, found...)
		}
	}
}
