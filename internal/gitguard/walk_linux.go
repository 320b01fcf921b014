package gitguard

import "fmt"

// walk looks for git directories in the tree rel, as git's discovery would
// find them from a directory the user is in: every ".git" entry, and every
// directory that is itself a git directory (git uses such a "bare"
// repository when started inside it). It does not descend into .git
// directories (gitdir checks what git uses there) nor through symlinks.
func (c *checker) walk(rel string, depth int) {
	if depth > maxDepth {
		c.findings = append(c.findings, Finding{Path: c.root.Join(rel),
			What: fmt.Sprintf("more than %d directories deep", maxDepth), Why: "stockade looked no further for git repositories"})
		return
	}
	ents := c.list(rel)
	for _, e := range ents {
		if e.name == ".git" {
			c.dotGit(join(rel, e.name))
		}
	}
	if isGitdir(ents) {
		c.gitdir(rel, 0)
	}
	for _, e := range ents {
		if e.kind == directory && e.name != ".git" {
			c.walk(join(rel, e.name), depth+1)
		}
	}
}
