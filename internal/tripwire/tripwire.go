// Package tripwire notices and undoes changes to the host paths that a sandbox
// must not change: the protected and masked paths of docs/sandbox.md and docs/audit.md
// (`--tripwire`).
//
// Inside the sandbox those paths are read-only binds or masks, so a change to
// one of them means that the sandbox leaked (or that something outside it
// wrote there). The session takes a Snapshot before the sandbox starts, runs
// Watch while it runs (with --tripwire: a confirmed change stops the session
// and is logged as TAMPER), and calls Restore after the sandbox has stopped
// (always, with or without the flag):
//
//	snap, err := tripwire.Take(paths) // after the placeholders exist
//	go snap.Watch(ctx, func(c tripwire.Change) { /* TAMPER: stop the session */ })
//	// ... the sandbox runs, then is stopped ...
//	restored, err := snap.Restore() // before the placeholders are removed
//
// A Snapshot records, for each path and, for a directory, every entry below
// it: the type, permission bits, owner, size, the SHA-256 of a regular file's
// content and a symlink's target. A path that does not exist is recorded as
// absent, so creating it is a change. Symlinks are never followed: a symlink
// put in place of a file is a change, not a way to the file it names.
// Timestamps are not compared (touching a file changes nothing that matters).
//
// Watch uses inotify, which is inode based: a write through any mount of the
// same inode (the sandbox's bind mount of the workdir, say) is seen by a watch
// set on the host path. Events only make Watch look again; every change it
// reports has been confirmed by comparing the current state with the
// Snapshot, so an open for writing that changes nothing, or a read, is no
// change. The state on disk is authoritative, so a watch placed on the wrong
// inode by a race can delay a report but never produce a wrong one.
//
// Limits (DefaultLimits; see Limits): a Snapshot holds at most 10,000
// entries and hashes at most 64 MiB; Take refuses more with an error naming
// the path and the limit. Content is kept in memory, to restore it, for files
// up to 1 MiB each; a bigger file is recorded by hash only, and Restore
// reports it as ErrTooLarge rather than pretending. Directory trees are not
// descended further than 64 levels. inotify is not recursive: Watch adds one
// watch per directory, counted against the user's fs.inotify.max_user_watches.
//
// Content of masked files (.env and the like) is kept in the supervisor's
// memory only; Change details name sizes and hashes, never content.
//
// Linux only: elsewhere Take returns ErrNotSupported.
package tripwire

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNotSupported is returned by Take on systems other than Linux.
var ErrNotSupported = errors.New("the tripwire is not supported on this system")

// ErrTooLarge marks a change that Restore cannot undo because the snapshot
// kept only the hash of the file's content.
var ErrTooLarge = errors.New("cannot restore, too large: the snapshot kept only its hash")

// Change kinds.
const (
	Created      = "created"       // exists now, did not at Take
	Removed      = "removed"       // existed at Take, does not now
	Replaced     = "replaced"      // a different type now: a symlink or directory where a file was, …
	Modified     = "modified"      // a file's content or a symlink's target
	ModeChanged  = "mode changed"  // permission bits (including setuid, setgid, sticky)
	OwnerChanged = "owner changed" // uid or gid
	// Blind: the tripwire cannot watch (Path is empty; Detail says why,
	// with the errno and the limit to raise).
	Blind = "cannot watch"
)

// Change is one difference between a Snapshot and the current state.
type Change struct {
	Path   string `json:"path"`   // host path
	Kind   string `json:"kind"`   // one of the kinds above
	Detail string `json:"detail"` // what differs, for the audit log; never file content
}

func (c Change) String() string {
	if c.Kind == Blind {
		return "the tripwire " + c.Kind + ": " + c.Detail
	}
	if c.Detail == "" {
		return c.Path + ": " + c.Kind
	}
	return c.Path + ": " + c.Kind + " (" + c.Detail + ")"
}

// Limits bound what a Snapshot records and what Watch adds.
type Limits struct {
	MaxEntries  int   // entries (files, directories, symlinks) in all trees together
	MaxDepth    int   // directory levels below a path
	MaxHashed   int64 // bytes of regular files hashed by Take
	MaxKeptFile int64 // a file's content is kept for Restore up to this size…
	MaxKept     int64 // …and while all kept content stays below this total
}

// DefaultLimits are the limits of Take.
var DefaultLimits = Limits{
	MaxEntries:  10_000,
	MaxDepth:    64,
	MaxHashed:   64 << 20,
	MaxKeptFile: 1 << 20,
	MaxKept:     64 << 20,
}

// Take snapshots paths with DefaultLimits; see Limits.Take.
func Take(paths []string) (*Snapshot, error) { return DefaultLimits.Take(paths) }

// Snapshot is the recorded state of a set of host paths. It does not change
// after Take, and its methods may be called concurrently.
type Snapshot struct {
	roots []*root
	lim   Limits

	// Test hooks. watching is called once Watch has its watches in place
	// and has compared once: from then on it sees events. checked is called
	// after each batch of events that turned out to be no change.
	watching, checked func()
}

// Paths returns the paths the snapshot covers, as given to Take (cleaned,
// sorted, without those that lie below another one).
func (s *Snapshot) Paths() []string {
	out := make([]string, len(s.roots))
	for i, r := range s.roots {
		out[i] = r.path
	}
	return out
}

// root is one path given to Take.
type root struct {
	path    string            // as given, cleaned
	real    string            // path with the symlinks of its ancestors resolved at Take
	entries map[string]*entry // by path relative to path ("" is path itself); empty when absent
}

// abs returns the host path of rel, for reporting.
func (r *root) abs(rel string) string { return filepath.Join(r.path, rel) }

type fileType uint8

const (
	typeRegular fileType = iota + 1
	typeDir
	typeSymlink
	typeOther // fifo, socket, device: recorded, compared, not restorable
)

func (t fileType) String() string {
	switch t {
	case typeRegular:
		return "file"
	case typeDir:
		return "directory"
	case typeSymlink:
		return "symlink"
	}
	return "special file"
}

// entry is the recorded state of one file, directory or symlink.
type entry struct {
	typ      fileType
	mode     uint32 // permission bits, 07777
	uid, gid uint32
	size     int64
	hashed   bool     // sum is valid (Diff hashes only files whose size is unchanged)
	sum      [32]byte // SHA-256 of the content of a regular file
	content  []byte   // kept for Restore; nil when too large (or empty: see kept)
	kept     bool
	target   string // symlink target
	readErr  string // Diff could not read the file; always a change
}

func (e *entry) describe() string {
	switch e.typ {
	case typeRegular:
		return fmt.Sprintf("file, %d bytes", e.size)
	case typeSymlink:
		return "symlink to " + e.target
	}
	return e.typ.String()
}

// compareRoot lists the differences between the entries of r at Take and cur,
// sorted by path.
func compareRoot(r *root, cur map[string]*entry) []Change {
	rels := make([]string, 0, len(r.entries)+len(cur))
	for rel := range r.entries {
		rels = append(rels, rel)
	}
	for rel := range cur {
		if r.entries[rel] == nil {
			rels = append(rels, rel)
		}
	}
	slices.Sort(rels)
	var out []Change
	for _, rel := range rels {
		out = append(out, compareEntry(r.abs(rel), r.entries[rel], cur[rel])...)
	}
	return out
}

func compareEntry(path string, was, now *entry) []Change {
	switch {
	case was == nil:
		return []Change{{path, Created, now.describe()}}
	case now == nil:
		return []Change{{path, Removed, was.describe()}}
	case was.typ != now.typ:
		return []Change{{path, Replaced, was.describe() + " → " + now.describe()}}
	}
	var out []Change
	switch {
	case now.readErr != "":
		out = append(out, Change{path, Modified, "cannot read it now: " + now.readErr})
	case was.typ == typeRegular && was.size != now.size:
		out = append(out, Change{path, Modified, fmt.Sprintf("size %d → %d bytes", was.size, now.size)})
	case was.typ == typeRegular && (!now.hashed || now.sum != was.sum):
		out = append(out, Change{path, Modified, fmt.Sprintf("content sha256 %x… → %x…", was.sum[:6], now.sum[:6])})
	case was.typ == typeSymlink && was.target != now.target:
		out = append(out, Change{path, Modified, "symlink target " + was.target + " → " + now.target})
	}
	if was.mode != now.mode && was.typ != typeSymlink {
		out = append(out, Change{path, ModeChanged, fmt.Sprintf("%04o → %04o", was.mode, now.mode)})
	}
	if was.uid != now.uid || was.gid != now.gid {
		out = append(out, Change{path, OwnerChanged, fmt.Sprintf("%d:%d → %d:%d", was.uid, was.gid, now.uid, now.gid)})
	}
	return out
}

// cleanRoots checks and normalises the paths given to Take: absolute, cleaned,
// sorted, without duplicates and without paths below another one (the outer
// tree covers them).
func cleanRoots(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("snapshotting %q: not an absolute path", p)
		}
		out = append(out, filepath.Clean(p))
	}
	slices.Sort(out)
	var kept []string
	for _, p := range slices.Compact(out) {
		if !slices.ContainsFunc(kept, func(q string) bool { return q == "/" || strings.HasPrefix(p, q+"/") }) {
			kept = append(kept, p)
		}
	}
	return kept, nil
}
