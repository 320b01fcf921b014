package job

import (
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/review"
)

// reviewAt takes a snapshot of the files in the workdir that the user will
// soon run (CI workflows, a virtualenv's startup files, node_modules/.bin)
// and returns what reads them again (check) and what reports their changes,
// one finding each (OnFinding; report checks first if check was not
// called). Call either only once nothing in the sandbox can act any more,
// so that nothing inside can change them after the check.
//
// The snapshot is taken while init starts; taken() waits for it, and the
// command starts only after that.
func reviewAt(j Job, h Hooks) (taken, check, report func()) {
	var snap *review.Snapshot
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		snap, err = review.Before(j.Policy.Workdir, review.Watched)
		if err != nil && h.Warn != nil {
			h.Warn("the files you run soon (CI workflows, .venv, node_modules/.bin) are not reviewed at exit: %v", err)
		}
	}()
	var (
		changes []review.Change
		err     error
	)
	check = sync.OnceFunc(func() {
		<-done
		if snap != nil {
			changes, err = snap.After()
		}
	})
	return func() { <-done }, check, func() {
		check()
		if snap == nil {
			return
		}
		if err != nil {
			if h.Warn != nil {
				h.Warn("reviewing the files you run soon: %v", err)
			}
			return
		}
		if h.OnFinding == nil {
			return
		}
		for _, line := range review.Lines(changes) {
			h.OnFinding(Finding{Kind: FindingReview, Detail: line})
		}
	}
}

// sweepFindings runs sweep and says what it did, a finding each.
func sweepFindings(j Job, trees mount.Trees, since time.Time) []Finding {
	found, err := sweep(j, trees, since)
	var out []Finding
	for _, s := range found {
		kind := FindingRemoved
		if s.Err != nil {
			kind = FindingUnhandled
		}
		out = append(out, Finding{Kind: kind, Path: s.Path, Rule: "host permissions", Detail: s.Detail()})
	}
	if err != nil {
		out = append(out, Finding{Kind: FindingUnhandled, Path: j.Policy.Workdir, Rule: "host permissions",
			Detail: "the trees the sandbox writes could not all be checked for setuid files or files other users may write (" + err.Error() + "): find them with find DIR -perm /6002, and chmod ug-s,o-w what you did not make"})
	}
	return out
}

// sweep runs review.Sweep on every tree of the host's that the sandbox
// writes (the workdir, each --rw tree, the sandbox HOME): for setuid
// files with containers (the sandbox's own processes cannot make them; a
// container binds only the workdir, but the command can hand it a
// descriptor of any file it may open), and for what other users may write
// wherever another user of the host can reach the tree. Paths come back
// whole. The trees are the ones the start resolved (canonical: a --rw
// tree named through a link is judged, and walked, where it is).
func sweep(j Job, trees mount.Trees, since time.Time) ([]review.Setuid, error) {
	if trees.Workdir == "" {
		trees = mount.Trees{Workdir: j.Policy.Workdir, RW: j.Policy.RW, HomeSource: j.HomeSource}
	}
	roots := append([]string{trees.Workdir}, trees.RW...)
	if trees.HomeSource != "" {
		roots = append(roots, trees.HomeSource)
	}
	var all []review.Setuid
	var errs []error
	for _, root := range roots {
		var what review.Strip
		if j.Containers {
			what |= review.SweepSetuid
		}
		if review.OthersReach(root) {
			what |= review.SweepShared
		}
		if what == 0 {
			continue
		}
		found, err := review.Sweep(root, since, what)
		for _, s := range found {
			s.Path = filepath.Join(root, s.Path)
			all = append(all, s)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}
