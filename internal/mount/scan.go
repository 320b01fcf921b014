package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// The scanner finds the protected and masked paths of a plan in the trees
// the sandbox sees, as the host holds them at start. Everything below a
// tree the sandbox can write is the agent's: it may have planted a symlink
// in any component, a file where a directory was, a hard link to a
// protected file, an earlier session's leftovers. So the scanner never
// resolves a path through a symlink the way open(2) would:
//
//   - it walks directories it read itself and descends only into real
//     directories;
//   - a symlink met at a protected name, or where a directory of a
//     protected pattern should be, is protected itself (bound on itself, so
//     that it cannot be removed or replaced inside), and its target is
//     resolved lexically on the host, component by component; if the target
//     lies in a tree the sandbox can write (the workdir, a --rw tree, the
//     sandbox HOME), what the link names there is protected too, at the path
//     where that tree appears inside; elsewhere the link leads out of the
//     sandbox's view and gives the agent nothing;
//   - a masked name that is a symlink is masked itself, and so is its
//     target when the sandbox can see it;
//   - a regular file where a directory of a protected pattern should be (a
//     .git file, the gitdir pointer of a linked worktree or submodule) is
//     protected itself.
//
// The executor (Steps) then resolves every such path with
// RESOLVE_NO_SYMLINKS, so a link swapped in between the scan and the
// mount fails the start instead of redirecting it.
//
// Relative patterns apply at every depth of a tree: a masked ".env" hides
// apps/web/.env as well, a protected ".vscode/" protects
// packages/a/.vscode. The walk does not descend into .git directories
// (patterns that start with ".git/" name what matters there) or
// node_modules (package managers' trees, which no host tool reads a
// protected name from, and often the largest part of a project).

// pruned are directory names the walk does not descend into.
var pruned = map[string]bool{".git": true, "node_modules": true}

// maxLinks bounds the symlinks followed to resolve one link's target, as
// the kernel's limit (40) does.
const maxLinks = 40

// glob matches one path element against a pattern element. The usual
// shapes ("lefthook.*", "*.code-workspace", ".env.*") are a literal prefix
// and suffix around one "*", checked without path.Match, which the walk
// would otherwise call for every entry of every directory of a large tree.
type glob struct {
	raw            string
	prefix, suffix string
	simple         bool
}

func newGlob(raw string) glob {
	g := glob{raw: raw}
	if i := strings.IndexByte(raw, '*'); i >= 0 && strings.Count(raw, "*") == 1 && !strings.ContainsAny(raw, "?[\\") {
		g.prefix, g.suffix, g.simple = raw[:i], raw[i+1:], true
	}
	return g
}

func (g glob) match(name string) bool {
	if g.simple {
		return len(name) >= len(g.prefix)+len(g.suffix) && strings.HasPrefix(name, g.prefix) && strings.HasSuffix(name, g.suffix)
	}
	ok, _ := path.Match(g.raw, name)
	return ok
}

// pattern is a compiled protect, mask or unmask entry.
type pattern struct {
	raw   string
	parts []string // path components; any may be a glob
	first glob     // parts[0], when it is a glob
	mask  bool
	hold  bool   // a missing instance at the top of a root gets a placeholder
	watch bool   // a missing instance at the top of a root is watched (Scan.Unheld) if not held
	abs   string // for an absolute pattern: the host path
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

func compile(raw string, mask bool) (pattern, bool) {
	p := pattern{raw: raw, mask: mask}
	s := strings.TrimSuffix(raw, "/")
	if filepath.IsAbs(s) {
		p.abs = filepath.Clean(s)
		return p, true
	}
	s = path.Clean(s)
	if s == "." || s == ".." || strings.HasPrefix(s, "../") {
		return p, false // policy refuses these; this holds even if it did not
	}
	p.parts = strings.Split(s, "/")
	p.first = newGlob(p.parts[0])
	return p, true
}

// tree is a host tree the sandbox sees, and where it appears inside.
type hostTree struct {
	host, sandbox string
	writable      bool
}

// at is where host path p, which lies in t, appears inside.
func (t hostTree) at(p string) string {
	if p == t.host {
		return t.sandbox
	}
	return t.sandbox + strings.TrimPrefix(p, t.host)
}

// Found is a protected or masked path: where it is on the host, where it
// appears inside, what it is.
type Found struct {
	Path   string // host path
	Target string // sandbox path
	Dir    bool
	Link   bool // the path is a symlink: protected or masked itself
	Mask   bool
	Why    string
	// Root is the host tree the path lies in, for pinning its ancestors.
	Root string
	// Held: a placeholder stockade makes for the run (Scan.Hold): empty,
	// so the plan shows an empty one from the staging root there.
	Held bool
	// Writable: the tree it lies in is writable inside (its ancestors are
	// pinned there).
	Writable bool
	// Dev, Ino identify what the scan found (0 for a placeholder yet to be
	// made): another object at the same path later is a new one.
	Dev, Ino uint64
	// Socket: a unix socket, masked because something on the host may
	// listen on it (not because of a pattern).
	Socket bool
}

// Scan is what the scanner found.
type Scan struct {
	Protect []Found
	Mask    []Found
	// Missing are instances of protected patterns (and of masked ones that
	// hold their place) that do not exist where a placeholder can be made:
	// their parent is a real directory in a tree the sandbox can write.
	Missing []MissingPath
	// Unheld are instances of protected patterns (and held masks) at the
	// top of a writable root that are missing with a missing parent
	// (".cursor/rules" without ".cursor"): no placeholder can hold them,
	// but a tripwire watches them, and the exit check looks for them.
	Unheld []MissingPath
	// Links are the hard links that refuse a start (a protected file with
	// another name the sandbox could write through).
	Links []string
	// Trees are cfg's trees, canonical; Err, when set, refuses the start
	// (a tree named through a symlink inside a writable tree).
	Trees Trees
	Err   error
	// Unlisted are the directories of writable trees that could not be
	// listed (Err names the first): the rest of the scan is whole, and the
	// exit check still acts on it.
	Unlisted []string
}

// MissingPath is a protected (or held masked) path that does not exist.
type MissingPath struct {
	Root, Pattern, Path string
	Target              string // where it appears inside
	Dir                 bool   // the pattern names a directory
	Mask                bool
}

type scanner struct {
	host     Host
	trees    []hostTree
	protect  []pattern
	mask     []pattern
	unmask   []pattern
	byName   map[string][]*pattern // patterns by their literal first component
	lits     []*pattern            // the same, in order
	globs    []*pattern            // patterns whose first component is a glob
	globsBy  map[byte][]*pattern   // the same with a literal prefix, by its first byte
	globsAny []*pattern            // the others
	out      Scan
	seen     map[string]bool // protect/mask results, by kind and host path
	unmasked map[string]bool
	missing  map[string]bool
	// maskByLast are the mask patterns by their last component ("*" for
	// a glob), for masked.
	maskByLast map[string][]*pattern
}

// ScanTrees finds the protected and masked paths of cfg (see the comment at
// the top of this file). Patterns in Hold get placeholders when missing at
// the top of a writable root, besides every non-glob protected pattern.
func ScanTrees(cfg Config, host Host) Scan {
	// The maps and slices are sized for the patterns up front: a scan of
	// an empty project is mostly indexing the 150 default patterns and
	// recording the ones it lacks, and growing them cost it about a fifth
	// of its time (BenchmarkScanTrees).
	s := &scanner{host: host, byName: make(map[string][]*pattern, len(cfg.Unmask)), seen: map[string]bool{},
		unmasked: map[string]bool{}, missing: make(map[string]bool, len(cfg.Protect))}
	hold, noHold := make(map[string]bool, len(cfg.Hold)), make(map[string]bool, len(cfg.NoHold))
	s.protect = make([]pattern, 0, len(cfg.Protect))
	s.mask = make([]pattern, 0, len(cfg.Mask))
	for _, h := range cfg.Hold {
		hold[h] = true
	}
	for _, h := range cfg.NoHold {
		noHold[h] = true
	}
	for _, raw := range cfg.Protect {
		if p, ok := compile(raw, false); ok {
			p.hold, p.watch = !noHold[raw], true
			s.protect = append(s.protect, p)
		}
	}
	for _, raw := range cfg.Mask {
		if p, ok := compile(raw, true); ok {
			p.hold = hold[raw]
			p.watch = p.hold
			s.mask = append(s.mask, p)
		}
	}
	for _, raw := range cfg.Unmask {
		if p, ok := compile(raw, true); ok {
			s.unmask = append(s.unmask, p)
		}
	}
	trees, err := resolveTrees(cfg, host)
	if err != nil {
		return Scan{Err: err}
	}
	s.out.Trees = trees
	s.trees = append(s.trees, hostTree{trees.Workdir, cfg.Workdir, true})
	for i, p := range trees.RW {
		s.trees = append(s.trees, hostTree{p, cfg.RW[i], true})
	}
	for i, p := range trees.RO {
		s.trees = append(s.trees, hostTree{p, cfg.RO[i], false})
	}
	if cfg.HomeSource != "" {
		// Walked by no pattern (it is the sandbox's own), but a link
		// elsewhere may lead into it.
		s.trees = append(s.trees, hostTree{trees.HomeSource, cfg.Home, true})
	}

	// Unmasked paths first, so that masks can skip them (a walk of its
	// own, only when there are any: on a large tree the walk is the cost).
	s.index(s.unmask)
	for _, t := range s.roots() {
		if len(s.unmask) == 0 {
			break
		}
		s.walk(t, t.host, true, func(p *pattern, t hostTree, dir string, top bool) {
			s.matchUnmask(p, dir, p.parts)
		}, nil)
		for i := range s.unmask {
			if p := &s.unmask[i]; p.abs != "" && within(p.abs, t.host) {
				s.unmasked[p.abs] = true
			}
		}
	}
	s.byName, s.lits, s.globs, s.globsBy, s.globsAny = make(map[string][]*pattern, len(s.mask)+len(s.protect)), nil, nil, nil, nil
	s.index(s.mask)
	s.index(s.protect)
	s.out.Missing = make([]MissingPath, 0, len(s.lits))
	s.out.Unheld = make([]MissingPath, 0, len(s.lits))
	for _, t := range s.roots() {
		s.walk(t, t.host, true, func(p *pattern, t hostTree, dir string, top bool) {
			if p.mask || t.writable {
				s.match(p, t, dir, p.parts, top)
			}
		}, s.absent)
		for _, list := range [][]pattern{s.mask, s.protect} {
			for i := range list {
				p := &list[i]
				if p.abs == "" || !within(p.abs, t.host) || (!p.mask && !t.writable) {
					continue
				}
				rel := strings.TrimPrefix(strings.TrimPrefix(p.abs, t.host), "/")
				if rel == "" {
					continue // a root itself is never masked or protected
				}
				s.match(p, t, t.host, strings.Split(rel, "/"), true)
			}
		}
	}
	return s.out
}

// roots are the trees patterns apply to: the workdir, --rw and --ro trees
// (not the sandbox HOME, the last one when there is one).
func (s *scanner) roots() []hostTree {
	if s.out.Trees.HomeSource != "" {
		return s.trees[:len(s.trees)-1]
	}
	return s.trees
}

func (s *scanner) index(ps []pattern) {
	for i := range ps {
		p := &ps[i]
		switch {
		case p.abs != "":
		case isGlob(p.parts[0]):
			s.globs = append(s.globs, p)
			if pre := p.first.prefix; p.first.simple && pre != "" {
				if s.globsBy == nil {
					s.globsBy = map[byte][]*pattern{}
				}
				s.globsBy[pre[0]] = append(s.globsBy[pre[0]], p)
			} else {
				s.globsAny = append(s.globsAny, p)
			}
		default:
			s.byName[p.parts[0]] = append(s.byName[p.parts[0]], p)
			s.lits = append(s.lits, p)
		}
	}
}

// walk calls visit for every pattern whose first component names an entry
// of dir, in dir and every real directory below it (but pruned and masked
// ones). A missing literal pattern is visited only at the top, where it may
// get a placeholder.
func (s *scanner) walk(t hostTree, dir string, top bool, visit func(p *pattern, t hostTree, dir string, top bool), absent func(p *pattern, t hostTree, dir string)) {
	ents, err := s.host.ReadDir(dir)
	if err != nil {
		s.unlisted(t, dir, err)
		return
	}
	var have map[string]bool // at the top, for the literal patterns' absence
	if top {
		have = make(map[string]bool, len(ents))
	}
	for _, e := range ents {
		if top {
			have[e.Name()] = true
		}
		for _, p := range s.byName[e.Name()] {
			visit(p, t, dir, top)
		}
	}
	if top && absent != nil {
		for _, p := range s.lits {
			if !have[p.parts[0]] {
				absent(p, t, dir)
			}
		}
	}
	// Each glob at most once per directory; a glob with a literal prefix
	// is tried only on names that start with its first byte.
	var tried map[*pattern]bool
	for _, e := range ents {
		name := e.Name()
		if name == "" {
			continue
		}
		for _, list := range [2][]*pattern{s.globsBy[name[0]], s.globsAny} {
			for _, p := range list {
				if !tried[p] && p.first.match(name) {
					if tried == nil {
						tried = map[*pattern]bool{}
					}
					tried[p] = true
					visit(p, t, dir, top)
				}
			}
		}
	}
	for _, e := range ents {
		if e.Type()&fs.ModeType == fs.ModeSocket {
			s.addSocket(t, filepath.Join(dir, e.Name()))
		}
	}
	for _, e := range ents {
		if e.Type()&fs.ModeType != fs.ModeDir || pruned[e.Name()] {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if s.seen["m"+sub] {
			continue // masked: its content is hidden anyway
		}
		s.walk(t, sub, false, visit, nil)
	}
}

// socketMask masks the unix sockets of the trees the sandbox sees.
var socketMask = pattern{raw: "(a unix socket)", mask: true}

// addSocket masks the unix socket q. Neither a read-only bind nor Landlock
// (ABI 7) stops a connect(2) by path, and the sandbox runs as the user who
// owns what listens there: a tmux server's socket in a project runs any
// command on the host, an SSH agent's gives its keys away. Masked, the
// path inside is an empty file, and a connect is refused. (--unmask
// PATH gives one back; the sockets below node_modules and .git, which the
// walk does not enter, and those made while the sandbox runs are not
// masked: docs/threats.md.)
func (s *scanner) addSocket(t hostTree, q string) {
	fi, err := s.host.Lstat(q)
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		return
	}
	s.add(&socketMask, t, q, fi, false, "a unix socket of the host: the command could talk to what listens on it")
	if n := len(s.out.Mask); n > 0 && s.out.Mask[n-1].Path == q {
		s.out.Mask[n-1].Socket = true
	}
}

// unlisted records a directory the scan could not list. A directory that
// vanished meanwhile is nothing; any other failure refuses the start: with
// only its execute bit (chmod 0311, which the agent may do to any directory
// of the project) a directory cannot be listed, yet every name in it can
// still be opened, so a secret or a protected file in it would go unmasked
// and unprotected.
//
// A --ro tree is not the agent's to chmod: a directory there that the user
// cannot list (a system directory of root's, 0700) is skipped; the sandbox
// cannot list it either.
func (s *scanner) unlisted(t hostTree, dir string, err error) {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || !t.writable {
		return // gone, or a file (a --ro file): nothing in it
	}
	s.out.Unlisted = append(s.out.Unlisted, dir)
	if s.out.Err != nil {
		return
	}
	fix := fmt.Sprintf("make it readable (chmod u+rx %s)", dir)
	if fi, e := s.host.Lstat(dir); e == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != syscall.Geteuid() {
			// A container of the engine chowned it to a subordinate id,
			// which the user can neither chmod nor remove.
			fix = fmt.Sprintf("it is owned by uid %d, not yours (a container's user, one of your subordinate ids?): take it back with `podman unshare chown -R 0:0 %s`", st.Uid, dir)
		}
	}
	s.out.Err = fmt.Errorf("cannot list %s (%w), so stockade cannot tell what to mask and protect in it; %s and run again", dir, err, fix)
}

// names lists the entries of dir, in tree t, that comp names.
func (s *scanner) names(t hostTree, dir, comp string) []string {
	if !isGlob(comp) {
		return []string{comp}
	}
	ents, err := s.host.ReadDir(dir)
	if err != nil {
		s.unlisted(t, dir, err)
		return nil
	}
	var out []string
	for _, e := range ents {
		if ok, _ := path.Match(comp, e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

func (s *scanner) matchUnmask(p *pattern, dir string, parts []string) {
	for _, n := range s.names(hostTree{}, dir, parts[0]) {
		q := filepath.Join(dir, n)
		if len(parts) == 1 {
			s.unmasked[q] = true
			continue
		}
		if fi, err := s.host.Lstat(q); err == nil && fi.IsDir() {
			s.matchUnmask(p, q, parts[1:])
		}
	}
}

// match applies the rest of pattern p (parts) in directory dir of tree t.
func (s *scanner) match(p *pattern, t hostTree, dir string, parts []string, top bool) {
	last := len(parts) == 1
	for _, n := range s.names(t, dir, parts[0]) {
		q := filepath.Join(dir, n)
		fi, err := s.host.Lstat(q)
		switch {
		case err != nil:
			if top && !isGlob(parts[0]) {
				s.missingAt(p, t, q, parts[1:])
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			s.link(p, t, q, parts[1:], top)
		case fi.IsDir() && !last:
			s.match(p, t, q, parts[1:], top)
		case last:
			s.add(p, t, q, fi, false, "")
		case !p.mask:
			// A file where a directory of the pattern should be: .git
			// as the gitdir pointer of a worktree or submodule.
			s.add(p, t, q, fi, false, "a file where "+p.raw+" expects a directory")
		}
	}
}

// absent is a literal pattern p whose first component dir lacks (the walk
// knows it from the directory's listing, with no lstat).
func (s *scanner) absent(p *pattern, t hostTree, dir string) {
	if !p.watch || !t.writable {
		return
	}
	s.missingAt(p, t, joinName(dir, p.parts[0]), p.parts[1:])
}

// joinName is filepath.Join(dir, name) for a clean dir and a clean single
// component, as the scan has them, without the cleaning: the scan joins
// a name for every literal pattern a directory lacks.
func joinName(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// missingAt records q, missing at the top of tree t, with rest the
// components of p below it: a placeholder holds q when it is p's last
// component; else nothing can (its parent is missing), and the path is
// only watched and looked for at exit.
func (s *scanner) missingAt(p *pattern, t hostTree, q string, rest []string) {
	if !p.watch || !t.writable {
		return
	}
	if len(rest) == 0 && p.hold {
		s.hold(p, t, q)
		return
	}
	if !slices.ContainsFunc(rest, isGlob) {
		full := q
		if len(rest) > 0 {
			full = joinName(q, strings.Join(rest, "/"))
		}
		s.out.Unheld = append(s.out.Unheld, MissingPath{Root: t.host, Target: t.at(full), Pattern: p.raw,
			Path: full, Dir: strings.HasSuffix(p.raw, "/"), Mask: p.mask})
	}
}

// link handles a symlink met at q while matching p, with rest the
// components of p after it.
func (s *scanner) link(p *pattern, t hostTree, q string, rest []string, top bool) {
	if !p.mask || len(rest) == 0 {
		s.add(p, t, q, nil, true, "")
	}
	target, links, ok := s.resolve(q)
	// Every link on the way that the sandbox can write is protected
	// itself too: replacing one in the middle of a chain would redirect
	// the first to a target of the agent's.
	for _, l := range links {
		if lt, in := s.treeOf(l); in && lt.writable && !p.mask {
			s.add(p, lt, l, nil, true, "on the way from "+q)
		}
	}
	if !ok {
		return // a loop, or too long: it names nothing
	}
	tt, ok := s.treeOf(target)
	if !ok || (!p.mask && !tt.writable) {
		return // out of the sandbox's view, or read-only inside anyway
	}
	why := "the target of " + q
	fi, err := s.host.Lstat(target)
	switch {
	case err != nil:
		if len(rest) == 0 && !p.mask && tt.writable && s.realDir(filepath.Dir(target), tt) {
			s.hold(p, tt, target)
		}
	case len(rest) == 0:
		s.add(p, tt, target, fi, false, why)
	case fi.IsDir():
		s.match(p, tt, target, rest, top)
	}
}

// resolve follows the symlink at q, and every symlink on the way to its
// target, lexically on the host: the path the host's own tools would
// reach. A missing component ends the resolution there (the rest is
// appended as it is).
func (s *scanner) resolve(q string) (string, []string, bool) {
	hops := 0
	var links []string // met on the way, after q
	var walkFrom func(p string) (string, bool)
	walkFrom = func(p string) (string, bool) {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := "/"
		for i, c := range parts {
			if c == "" {
				continue
			}
			next := filepath.Join(cur, c)
			fi, err := s.host.Lstat(next)
			if err != nil {
				return filepath.Join(append([]string{next}, parts[i+1:]...)...), true
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				cur = next
				continue
			}
			if hops++; hops > maxLinks {
				return "", false
			}
			links = append(links, next)
			l, err := s.host.Readlink(next)
			if err != nil {
				return "", false
			}
			if !filepath.IsAbs(l) {
				l = filepath.Join(cur, l)
			}
			return walkFrom(filepath.Join(append([]string{filepath.Clean(l)}, parts[i+1:]...)...))
		}
		return cur, true
	}
	hops++
	l, err := s.host.Readlink(q)
	if err != nil {
		return "", nil, false
	}
	if !filepath.IsAbs(l) {
		l = filepath.Join(filepath.Dir(q), l)
	}
	target, ok := walkFrom(filepath.Clean(l))
	return target, links, ok
}

// treeOf is the tree that holds host path p, the innermost if trees nest.
func (s *scanner) treeOf(p string) (hostTree, bool) {
	var best hostTree
	found := false
	for _, t := range s.trees {
		if within(p, t.host) && (!found || len(t.host) > len(best.host)) {
			best, found = t, true
		}
	}
	return best, found
}

// realDir reports whether dir is a directory reached from t's root without
// a symlink.
func (s *scanner) realDir(dir string, t hostTree) bool {
	for d := dir; within(d, t.host); d = filepath.Dir(d) {
		fi, err := s.host.Lstat(d)
		if err != nil || !fi.IsDir() {
			return false
		}
		if d == t.host {
			return true
		}
	}
	return false
}

func (s *scanner) hold(p *pattern, t hostTree, q string) {
	if s.missing[q] || s.unmasked[q] {
		return
	}
	s.missing[q] = true
	s.out.Missing = append(s.out.Missing, MissingPath{Root: t.host, Target: t.at(q), Pattern: p.raw, Path: q,
		Dir: strings.HasSuffix(p.raw, "/"), Mask: p.mask || s.masked(q, t)})
}

// masked reports whether a mask pattern names q, which does not exist yet
// (a mask wins over a protection, so a placeholder there is masked).
func (s *scanner) masked(q string, t hostTree) bool {
	if s.maskByLast == nil {
		s.maskByLast = map[string][]*pattern{}
		for i := range s.mask {
			p := &s.mask[i]
			last := filepath.Base(p.abs)
			if p.abs == "" {
				last = p.parts[len(p.parts)-1]
			}
			if isGlob(last) {
				last = "*"
			}
			s.maskByLast[last] = append(s.maskByLast[last], p)
		}
	}
	rel := strings.Split(strings.TrimPrefix(strings.TrimPrefix(q, t.host), "/"), "/")
	for _, p := range slices.Concat(s.maskByLast[filepath.Base(q)], s.maskByLast["*"]) {
		parts := p.parts
		if p.abs != "" {
			if p.abs != q {
				continue
			}
			return true
		}
		if len(parts) > len(rel) {
			continue
		}
		tail, ok := rel[len(rel)-len(parts):], true
		for i := range parts {
			if m, _ := path.Match(parts[i], tail[i]); !m {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// add records q (fi nil for a symlink) as protected or masked by p.
func (s *scanner) add(p *pattern, t hostTree, q string, fi fs.FileInfo, link bool, why string) {
	kind := "p"
	if p.mask {
		kind = "m"
		if s.unmasked[q] {
			return
		}
	}
	if s.seen[kind+q] {
		return
	}
	s.seen[kind+q] = true
	f := Found{Path: q, Target: t.at(q), Link: link, Mask: p.mask, Root: t.host, Why: why, Writable: t.writable}
	if f.Why == "" {
		f.Why = p.raw
	}
	if fi != nil {
		f.Dir = fi.IsDir()
		f.Dev, f.Ino = devIno(fi)
	} else if lfi, err := s.host.Lstat(q); err == nil { // a symlink: itself
		f.Dev, f.Ino = devIno(lfi)
	}
	if p.mask {
		s.out.Mask = append(s.out.Mask, f)
		return
	}
	s.out.Protect = append(s.out.Protect, f)
	if !link {
		s.checkLinks(q, fi)
	}
}

// checkLinks records a protected regular file with more than one name, or
// one in a protected directory: another name for it in a tree the sandbox
// can write would be a writable way to it.
func (s *scanner) checkLinks(q string, fi fs.FileInfo) {
	if fi == nil {
		return
	}
	if fi.Mode().IsRegular() {
		if nlink(fi) > 1 {
			s.out.Links = append(s.out.Links, q)
		}
		return
	}
	if !fi.IsDir() {
		return
	}
	ents, err := s.host.ReadDir(q)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type()&fs.ModeType != 0 && !e.IsDir() {
			continue // symlinks and devices have no content to change
		}
		c := filepath.Join(q, e.Name())
		if ci, err := s.host.Lstat(c); err == nil {
			s.checkLinks(c, ci)
		}
	}
}

// LinkError refuses a start: protected files with more than one name.
type LinkError struct{ Paths []string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("protected file %s has another name (a hard link) that the sandbox could write through; "+
		"find it with `find / -xdev -samefile %s` and remove it, or replace one of the two with a copy", e.Paths[0], e.Paths[0])
}

func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

func devIno(fi fs.FileInfo) (uint64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
