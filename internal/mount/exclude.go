package mount

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The block stockade keeps in a repository's info/exclude while sandboxes
// hold placeholders in its work tree: on the host, git status would list
// each placeholder file as untracked for the length of the run. (A
// directory needs no line: git lists no empty directory.) Only what lies
// between these two lines, and they, are ever changed; the lines around
// are the user's and are kept byte for byte.
const (
	ExcludeBegin = "# >>> stockade: placeholders of running sessions, removed when they end (do not edit)"
	ExcludeEnd   = "# <<< stockade"
)

// maxExclude is the most of an info/exclude file stockade reads: a bigger
// one is left alone (and its placeholders listed by git status).
const maxExclude = 1 << 20

// ErrExcludeSkipped wraps why a repository's info/exclude was not looked
// at, when that is no fault (its git directory is outside the work tree,
// or it has no info directory): a line for the debug log, not a warning.
var ErrExcludeSkipped = errors.New("the placeholders stay visible to git status on the host")

// errExcludeOdd is an info/exclude whose marker lines are not one begin
// followed by one end: stockade cannot tell its lines from the user's.
var errExcludeOdd = errors.New("its stockade marker lines are not one pair; edit it by hand")

// editExclude returns content with the block holding lines: put in place
// of the block content has, added at the top when it has none, or taken
// out with its marker lines when lines is empty. Content without a block
// and no lines is returned as it is. A file whose marker lines are not
// exactly one begin line followed by one end line is refused: nothing of
// it is the block for sure.
func editExclude(content []byte, lines []string) ([]byte, error) {
	begin, end := -1, -1 // byte offsets of the marker lines' starts
	for off := 0; off < len(content); {
		n := bytes.IndexByte(content[off:], '\n')
		next := len(content)
		if n >= 0 {
			next = off + n + 1
		}
		switch strings.TrimSuffix(string(content[off:next]), "\n") {
		case ExcludeBegin:
			if begin >= 0 || end >= 0 {
				return nil, errExcludeOdd
			}
			begin = off
		case ExcludeEnd:
			if begin < 0 || end >= 0 {
				return nil, errExcludeOdd
			}
			end = off
		}
		off = next
	}
	if begin >= 0 && end < 0 {
		return nil, errExcludeOdd
	}
	var block []byte
	if len(lines) > 0 {
		block = []byte(ExcludeBegin + "\n" + strings.Join(lines, "\n") + "\n" + ExcludeEnd + "\n")
	}
	if begin < 0 {
		if block == nil {
			return content, nil
		}
		// At the top: what follows is the file as it was, byte for byte
		// (at the end, a last line without a newline would get one that
		// stays). The order of lines matters to git only for a "!"
		// pattern, which the user's own .gitignore overrides anyway.
		return append(block, content...), nil
	}
	after := end + len(ExcludeEnd)
	if after < len(content) {
		after++ // its newline
	}
	out := make([]byte, 0, len(content)-(after-begin)+len(block))
	out = append(out, content[:begin]...)
	out = append(out, block...)
	return append(out, content[after:]...), nil
}

// excludeBlocks are the lines of the block of each repository in tops,
// from the placeholder files of the records rs: sorted, each path once.
func excludeBlocks(tops []string, rs []record) map[string][]string {
	out := map[string][]string{}
	for _, top := range tops {
		out[top] = nil
	}
	seen := map[string]bool{}
	for _, r := range rs {
		for _, ph := range r.Placeholders {
			if _, ok := out[ph.Top]; !ok || ph.Top == "" || ph.Dir || seen[ph.Path] {
				continue
			}
			seen[ph.Path] = true
			out[ph.Top] = append(out[ph.Top], excludeLines(ph.Top, []Placeholder{ph})...)
		}
	}
	for _, lines := range out {
		slices.Sort(lines)
	}
	return out
}

// ExcludeError is a problem with the info/exclude of the work tree at Top.
type ExcludeError struct {
	Top string
	Err error
}

func (e *ExcludeError) Error() string {
	return fmt.Sprintf("leaving placeholders out of git status in %s: %v", e.Top, e.Err)
}

func (e *ExcludeError) Unwrap() error { return e.Err }

// tops lists the work trees of ps, each once.
func tops(ps []Placeholder) []string {
	var out []string
	for _, ph := range ps {
		if ph.Top != "" && !slices.Contains(out, ph.Top) {
			out = append(out, ph.Top)
		}
	}
	return out
}
