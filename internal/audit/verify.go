package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ProblemKind classifies what Verify found wrong.
type ProblemKind string

const (
	Malformed ProblemKind = "malformed" // not a line this package writes
	BadHash   ProblemKind = "hash"      // the content does not match the line's hash
	BadPrev   ProblemKind = "prev"      // prev is not the hash of the line before
	Removed   ProblemKind = "removed"   // seqs are missing
	Reordered ProblemKind = "reordered" // seqs go backwards, repeat or come later
	Session   ProblemKind = "session"   // a line of another session
	Truncated ProblemKind = "truncated" // the head records lines past the end
	BadHead   ProblemKind = "head"      // the head is missing or does not match the log
)

// Problem is one thing wrong with a log.
type Problem struct {
	Line    int    // 1-based; 0 for problems of the head
	Seq     uint64 // the line's seq when it could be read
	Kind    ProblemKind
	Message string // the whole sentence, starting with "line N" or "head"
}

func (p Problem) String() string { return p.Message }

// Report is the result of Verify.
type Report struct {
	Lines    int    // lines read
	Session  string // session of the first readable line
	LastSeq  uint64 // seq of the last line (0 for an empty log)
	LastHash string // hash of the last line (64 zeros for an empty log)
	Problems []Problem
	// Gaps describe the gap events found: cut-off lines the writer removed
	// and recorded, so that the chain goes on. They are not problems: the
	// chain verifies over them, but each stands for an event that was lost.
	Gaps []string
	// Ended describes the log_end and dropped events found: the writer
	// ended the log on purpose (its cap, a full disk, a failed write), and
	// what it could not write after that. Not problems either: they say
	// why the log is shorter than the session.
	Ended []string
}

// OK reports whether the log verified.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Err is nil for a log that verified, or an error naming the first problem
// and how many more there are.
func (r Report) Err() error {
	switch len(r.Problems) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("audit log does not verify: %s", r.Problems[0])
	}
	return fmt.Errorf("audit log does not verify: %s (and %d more problems)", r.Problems[0], len(r.Problems)-1)
}

// gap is a run of missing seqs, remembered so that a seq that shows up
// later turns "removed" into "reordered".
type gap struct {
	from, to uint64
	problem  int    // index of the problem that reported it
	after    string // that problem's "seq X follows seq Y"
	filled   bool   // a seq of the gap came later
}

// maxGaps bounds the memory spent on telling removal from reordering in a
// badly damaged log.
const maxGaps = 1024

type verifier struct {
	rep      Report
	head     *Head
	lastSeq  uint64 // seq of the previous readable line
	lastHash string // its hash ("" after an unreadable line)
	unread   uint64 // unreadable lines since it: they may hold the missing seqs
	maxSeq   uint64 // highest seq seen
	headHash string // hash of the line with the head's seq, once seen
	gaps     []gap
}

// Verify reads a log and checks every line: its form, its hash, that its
// prev is the hash of the line before, that seqs count up by one from 1, and
// that all lines belong to one session. With a head (nil: none), it also
// checks that the log reaches the head's seq and that the line there has the
// head's hash, which is the only way to detect lines cut off the end; lines
// past the head are accepted (see the package doc). The error is for reading
// r only; what is wrong with the log is in the Report.
func Verify(r io.Reader, head *Head) (Report, error) {
	v := &verifier{head: head, lastHash: zeroHash, rep: Report{LastHash: zeroHash}}
	lr := newLineReader(r)
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		v.rep.Lines++
		if err != nil && !errors.Is(err, errLineTooLong) && !errors.Is(err, errNoNewline) {
			return v.rep, fmt.Errorf("reading audit log: %w", err)
		}
		v.line(line, err)
	}
	v.finish()
	return v.rep, nil
}

// VerifyFile verifies the log at path against its head file (HeadPath). A
// log with lines but no head is a problem: the writer always makes one.
func VerifyFile(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("verifying audit log: %w", err)
	}
	defer f.Close()
	return verifyWithHead(f, HeadPath(path))
}

// verifyWithHead reads the head before the log: a live writer updates the
// head after the log, so in this order the head never runs ahead of the log.
func verifyWithHead(r io.Reader, headPath string) (Report, error) {
	head, err := ReadHead(headPath)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		rep, verr := Verify(r, nil)
		rep.Problems = append(rep.Problems, Problem{Kind: BadHead, Message: "head: " + err.Error()})
		return rep, verr
	}
	rep, err := Verify(r, head)
	if missing && rep.Lines > 0 {
		rep.Problems = append(rep.Problems, Problem{Kind: BadHead,
			Message: fmt.Sprintf("head: %s is missing, so a cut-off tail cannot be detected", headPath)})
	}
	return rep, err
}

func (v *verifier) add(line int, seq uint64, kind ProblemKind, format string, args ...any) {
	where := fmt.Sprintf("line %d", line)
	if seq != 0 {
		where += fmt.Sprintf(" (seq %d)", seq)
	}
	v.rep.Problems = append(v.rep.Problems, Problem{Line: line, Seq: seq, Kind: kind, Message: where + ": " + fmt.Sprintf(format, args...)})
}

func (v *verifier) line(line []byte, readErr error) {
	n := v.rep.Lines
	if readErr != nil {
		v.add(n, 0, Malformed, "%v", readErr)
		v.lastHash, v.unread = "", v.unread+1
		return
	}
	ev, err := parseLine(line)
	if err != nil {
		v.add(n, 0, Malformed, "not an audit line: %v", err)
		v.lastHash, v.unread = "", v.unread+1
		return
	}
	if v.rep.Session == "" {
		v.rep.Session = ev.Session
	}
	if ev.Session != v.rep.Session {
		v.add(n, ev.Seq, Session, "session %s differs from the log's session %s", ev.Session, v.rep.Session)
	}
	if want, err := lineHash(line); err != nil {
		v.add(n, ev.Seq, Malformed, "%v", err)
	} else if want != ev.Hash {
		v.add(n, ev.Seq, BadHash, "hash does not match its content")
	}
	v.chain(n, ev)
	switch ev.Event {
	case EventGap:
		v.rep.Gaps = append(v.rep.Gaps, fmt.Sprintf("line %d (seq %d): %s", n, ev.Seq, sanitize(gapMessage(ev.Fields))))
	case EventLogEnd, EventDropped:
		msg := kinds[ev.Event].message(ev.Fields)
		v.rep.Ended = append(v.rep.Ended, fmt.Sprintf("line %d (seq %d): %s", n, ev.Seq, sanitize(msg)))
	}
	v.unread = 0
	v.lastSeq, v.lastHash = ev.Seq, ev.Hash
	v.rep.LastSeq, v.rep.LastHash = ev.Seq, ev.Hash
	v.maxSeq = max(v.maxSeq, ev.Seq)
	if v.head != nil && ev.Seq == v.head.Seq && v.headHash == "" {
		v.headHash = ev.Hash
	}
}

// chain checks ev's seq and prev against the line before. A prev mismatch
// is reported only between consecutive seqs: otherwise it is the expected
// consequence of a seq problem already reported.
func (v *verifier) chain(n int, ev Event) {
	after := fmt.Sprintf("seq %d follows seq %d", ev.Seq, v.lastSeq)
	if n == 1 {
		after = fmt.Sprintf("the log starts at seq %d", ev.Seq)
	}
	switch {
	case ev.Seq > v.maxSeq+1 && ev.Seq-v.maxSeq-1 <= v.unread:
		// The missing seqs are likely on the unreadable lines, reported already.
	case ev.Seq > v.maxSeq+1:
		from, to := v.maxSeq+1, ev.Seq-1
		missing := fmt.Sprintf("seq %d was removed", from)
		if to > from {
			missing = fmt.Sprintf("seqs %d-%d were removed", from, to)
		}
		v.add(n, 0, Removed, "%s: %s", after, missing)
		if len(v.gaps) < maxGaps {
			v.gaps = append(v.gaps, gap{from: from, to: to, problem: len(v.rep.Problems) - 1, after: after})
		}
		return
	case ev.Seq <= v.maxSeq:
		v.late(n, ev.Seq, after)
		return
	}
	if v.lastHash == "" || ev.Seq != v.lastSeq+1 || ev.Prev == v.lastHash {
		return
	}
	if n == 1 {
		v.add(n, ev.Seq, BadPrev, "prev of the first line is not 64 zeros (the lines before it were removed)")
	} else {
		v.add(n, ev.Seq, BadPrev, "prev does not match the hash of line %d (inserted, reordered or removed)", n-1)
	}
}

// late handles a seq at or below the highest seen so far: a line moved from
// an earlier gap, or a repeated or inserted one.
func (v *verifier) late(n int, seq uint64, after string) {
	for i := range v.gaps {
		g := &v.gaps[i]
		if seq < g.from || seq > g.to {
			continue
		}
		if g.filled && seq == v.lastSeq+1 {
			return // the rest of a block that was moved: reported at its first line
		}
		if !g.filled {
			g.filled = true
			p := &v.rep.Problems[g.problem]
			p.Kind = Reordered
			what := fmt.Sprintf("seq %d comes later, at line %d (reordered)", seq, n)
			if g.to > g.from {
				what = fmt.Sprintf("seqs %d-%d are not here; seq %d comes later, at line %d (reordered or removed)", g.from, g.to, seq, n)
			}
			p.Message = fmt.Sprintf("line %d: %s: %s", p.Line, g.after, what)
		}
		v.add(n, 0, Reordered, "%s: the line is out of order (reordered)", after)
		return
	}
	v.add(n, 0, Reordered, "%s: seq %d appeared before (a line was inserted, repeated or reordered)", after, seq)
}

// finish checks the end of the log against the head.
func (v *verifier) finish() {
	h := v.head
	if h == nil {
		return
	}
	head := fmt.Sprintf("head (seq %d)", h.Seq)
	switch {
	case v.rep.Lines > 0 && v.rep.Session != "" && h.Session != v.rep.Session:
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: BadHead,
			Message: fmt.Sprintf("%s: records session %s, but the log is of session %s", head, h.Session, v.rep.Session)})
	case h.Seq > v.maxSeq:
		missing := fmt.Sprintf("seq %d is missing", h.Seq)
		if h.Seq > v.maxSeq+1 {
			missing = fmt.Sprintf("seqs %d-%d are missing", v.maxSeq+1, h.Seq)
		}
		end := fmt.Sprintf("the last seq is %d (line %d)", v.maxSeq, v.rep.Lines)
		if v.maxSeq == 0 {
			end = "the log has no readable line"
		}
		v.rep.Problems = append(v.rep.Problems, Problem{Line: v.rep.Lines + 1, Kind: Truncated,
			Message: fmt.Sprintf("end of log: %s, but the head records seq %d: the tail was cut off (%s)", end, h.Seq, missing)})
	case h.Seq == 0 && h.Hash != zeroHash, h.Seq > 0 && v.headHash != "" && v.headHash != h.Hash:
		v.rep.Problems = append(v.rep.Problems, Problem{Kind: BadHead,
			Message: fmt.Sprintf("%s: records hash %.12s…, but the line with seq %d has hash %.12s… (the head or the log was edited)",
				head, h.Hash, h.Seq, v.headHash)})
	}
}
