package mount

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/proc"
)

// Records is the directory where running sandboxes record their
// placeholders. A record names the process that will remove them; if that
// process is killed first, the next stockade to start removes them instead
// (Sweep). Sandboxes of the same project share placeholders: one that found
// a placeholder of another already there records it as borrowed, and the
// owner that ends first hands it over rather than removing it from under
// the other's read-only bind.
type Records struct {
	Dir string
	// ExcludeProblem hears what kept stockade from keeping the block of
	// placeholders in a repository's info/exclude (an *ExcludeError; one
	// wrapping ErrExcludeSkipped is no fault); nil drops it.
	ExcludeProblem func(error)
}

type record struct {
	PID          int           `json:"pid"`
	Start        string        `json:"start"` // /proc/PID/stat start time: a reused PID is not the same process
	Placeholders []Placeholder `json:"placeholders"`
	// Pending: the record was written before its placeholders were made
	// (Claim), and names what was planned: a process killed before it
	// recorded what it made leaves this, and the sweep removes what of it
	// the process made (see pendingOwn). Since is when it was written, in
	// Unix nanoseconds.
	Pending bool  `json:"pending,omitempty"`
	Since   int64 `json:"since,omitempty"`
}

func (r record) live() bool { return proc.Alive(r.PID, r.Start) }

// lock serializes every change to the records.
func (rs Records) lock() (func(), error) {
	if err := os.MkdirAll(rs.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", rs.Dir, err)
	}
	f, err := os.OpenFile(filepath.Join(rs.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking placeholder records: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking placeholder records: %w", os.NewSyscallError("flock", err))
	}
	return func() { f.Close() }, nil
}

// Stash is where placeholders of this user wait between runs.
func (rs Records) Stash() Stash {
	if rs.Dir == "" {
		return Stash{}
	}
	return Stash{Dir: filepath.Join(rs.Dir, "stash")}
}

// Claim makes the placeholders of planned for the calling process under
// id and records them, in one step under the records' lock, and returns
// them with the function that releases them at the end: each is removed,
// or handed to a live sandbox that borrowed it.
//
// A planned placeholder that exists already is borrowed: another sandbox
// of this project made it, and it was recorded under the same lock, so the
// owner that ends first sees the borrower and hands the placeholder over
// instead of removing it from under the borrower's read-only bind.
func (rs Records) Claim(id string, planned []Placeholder) ([]Placeholder, func() error, error) {
	none := func() error { return nil }
	if len(planned) == 0 {
		return nil, none, nil
	}
	unlock, err := rs.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	stash := rs.Stash()
	stash.prepare()
	stash, closeStash := stash.open()
	defer closeStash()
	// What is planned is recorded first: a process killed (SIGKILL, or a
	// signal that arrived before it relays them) between the making and
	// the record would otherwise leave placeholders that no record names,
	// in the project for good.
	pid, start := os.Getpid(), proc.StartTime(os.Getpid())
	dirs := newParents()
	defer dirs.close()
	intent := record{PID: pid, Start: start, Pending: true, Since: time.Now().UnixNano(), Placeholders: intended(planned, stash, dirs)}
	if err := rs.write(id, intent); err != nil {
		return nil, nil, err
	}
	ps, err := create(planned, stash, dirs)
	if err != nil {
		rs.retire(id) // Create removed what it made
		return nil, nil, err
	}
	if testHookMade != nil {
		testHookMade()
	}
	mine := record{PID: pid, Start: start, Placeholders: ps}
	if err := rs.write(id, mine); err != nil {
		rs.release(id, record{Placeholders: ps})
		return nil, nil, err
	}
	return ps, func() error {
		unlock, err := rs.lock()
		if err != nil {
			return err
		}
		defer unlock()
		// Another sandbox rewrites this record to hand a placeholder
		// over: what it says now is read again. (A stamp of the file
		// cannot tell: record files are recycled as spares, so after two
		// hand-overs the record can be the same inode, of the same size,
		// and on a file system of whole-second times of the same ctime.)
		r, err := rs.read(id)
		if errors.Is(err, os.ErrNotExist) {
			// Another stockade took this process for dead (it could not
			// see it: another PID namespace) and released them; what is
			// at their paths now may be another run's.
			return fmt.Errorf("the record of the placeholders of %s was removed while it ran: another stockade released them", id)
		}
		if err != nil {
			r = mine
		}
		return rs.release(id, r)
	}, nil
}

// Live are the placeholders that sandboxes own, by path (more than one
// record may name a path: a stale one, and the one whose placeholder is
// there now): a scan finds them
// as existing paths, and a sandbox that protects the same path must borrow
// them (Claim) rather than take them for the project's own. Those of a
// record whose process is gone count too, until a sweep releases them: it
// hands them to a borrower rather than remove them from under its bind (a
// process killed in its Claim after this start's sweep, before its scan).
// Read under the lock, so that no record of a live process is pending
// (Claim holds it from the pending record to the final one).
func (rs Records) Live() map[string][]Placeholder {
	out := map[string][]Placeholder{}
	ents, _ := os.ReadDir(rs.Dir)
	if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".json") }) {
		return out // none: no lock to take
	}
	unlock, err := rs.lock()
	if err != nil {
		return out
	}
	defer unlock()
	for id, r := range rs.all() {
		phs := r.Placeholders
		if r.Pending {
			phs = rs.pendingOwn(id, r)
		}
		for _, ph := range phs {
			if !ph.Borrowed {
				out[ph.Path] = append(out[ph.Path], ph)
			}
		}
	}
	return out
}

// Sweep releases the placeholders of every record whose process is gone.
func (rs Records) Sweep() error {
	ents, err := os.ReadDir(rs.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".json") }) {
		return nil // no record to look at: no lock to take, at every start
	}
	unlock, err := rs.lock()
	if err != nil {
		return err
	}
	defer unlock()
	// Read again under the lock: a record written since the look above
	// (a pending one, whose process was then killed) is swept too.
	if ents, err = os.ReadDir(rs.Dir); err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		r, err := rs.read(id)
		if err != nil {
			if errors.As(err, new(*json.SyntaxError)) || errors.As(err, new(*json.UnmarshalTypeError)) {
				os.Remove(filepath.Join(rs.Dir, e.Name())) // not a record: nothing to go by
			}
			continue
		}
		if r.live() {
			continue
		}
		if r.Pending {
			r.Placeholders = rs.pendingOwn(id, r)
		}
		errs = append(errs, rs.release(id, r))
	}
	// A record's temporary file is renamed into place under the lock:
	// one there now is what a process killed while writing left.
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp") {
			os.Remove(filepath.Join(rs.Dir, n))
		}
	}
	return errors.Join(errs...)
}

// testHookMade, when set, runs once Claim has made the placeholders and
// before it records them (a test kills the process there).
var testHookMade func()

// intended is what Claim records before it makes the placeholders of
// planned: each as planned, with the inode that waits for it in the stash,
// which Create will move into place. One the stash lacks is made there
// first, so that the record can name it; with no stash on the
// placeholder's file system, the inode is 0 (see madeSince). Each is
// marked borrowed, so that the sweep of an older stockade, which knows no
// pending record, leaves them alone rather than take a user's file at one
// of these paths for a placeholder changed outside the sandbox.
func intended(planned []Placeholder, stash Stash, dirs parents) []Placeholder {
	out := slices.Clone(planned)
	for i := range out {
		out[i].Ino = stash.stock(out[i], dirs)
		out[i].Borrowed = true
	}
	return out
}

// pendingOwn returns the placeholders of r, a pending record of a process
// that is gone (see record.Pending), that the process made before it was
// killed, each with the inode found (madeSince), at a path that no other
// record says it made. Anything else there is not its to remove, and is
// left alone. The other records count whether their process is alive or
// not: a dead one's release, before or after this, hands what it made to
// its borrowers or removes it. Held under lock.
func (rs Records) pendingOwn(id string, r record) []Placeholder {
	owned := map[string]bool{}
	for oid, o := range rs.all() {
		if oid == id || o.Pending {
			continue
		}
		for _, ph := range o.Placeholders {
			if !ph.Borrowed {
				owned[ph.Path] = true
			}
		}
	}
	since := time.Unix(0, r.Since)
	var out []Placeholder
	for _, ph := range r.Placeholders {
		if owned[ph.Path] {
			continue
		}
		if ino, ok := madeSince(ph, since); ok {
			ph.Ino, ph.Borrowed = ino, false
			out = append(out, ph)
		}
	}
	return out
}

// release removes the placeholders r owns, except those a live record
// borrowed, which become that record's own; then r goes. Held under lock.
func (rs Records) release(id string, r record) error {
	others := rs.others(id)
	// What another live record says it made, and is at its path, is that
	// record's, whatever this one says (a record left behind by a failed
	// hand-over, one wrongly judged dead): it is never removed from under
	// it.
	owned := map[string][]uint64{}
	for _, o := range others {
		for _, ph := range o.Placeholders {
			if !ph.Borrowed {
				owned[ph.Path] = append(owned[ph.Path], ph.Ino)
			}
		}
	}
	var remove, held []Placeholder
	var heldErrs []error
	for _, ph := range r.Placeholders {
		if ph.Borrowed {
			continue
		}
		if inos, ok := owned[ph.Path]; ok && slices.Contains(inos, inoAt(ph)) {
			continue
		}
		if taker, o := handOver(others, ph); taker != "" {
			if err := rs.write(taker, o); err != nil {
				held = append(held, ph)
				heldErrs = append(heldErrs, fmt.Errorf("handing placeholder %s over: %w; left in place", ph.Path, err))
				continue
			}
			others[taker] = o
			continue
		}
		remove = append(remove, ph)
	}
	// The blocks of git's excludes go first, beside the removal (both
	// wait on the filesystem): should this process be killed before the
	// record is retired, the next start's sweep does it all again.
	var wg sync.WaitGroup
	if ts := tops(r.Placeholders); len(ts) > 0 {
		wg.Go(func() { rs.syncExcludes(ts, id) })
	}
	err := RemovePlaceholders(remove, rs.Stash())
	wg.Wait()
	if len(held) > 0 {
		// The record stays, for the next sweep to hand them over or
		// remove them: the borrower's record still says it borrowed
		// them. With them alone, or, if that cannot be written either,
		// as it was: what it names that another run owns now is passed
		// over above.
		r.Placeholders, r.Pending = held, false
		rs.write(id, r)
		return errors.Join(append(heldErrs, err)...)
	}
	rs.retire(id)
	return err
}

// Exclude writes the block of placeholders in the info/exclude of each
// repository that holds one of ps (see ExcludeBegin), as the records say
// it is now: called once ps are recorded (Claim), it is off the path of
// the start. Each release rewrites it in the same way, without them.
func (rs Records) Exclude(ps []Placeholder) {
	ts := tops(ps)
	if len(ts) == 0 {
		return
	}
	unlock, err := rs.lock()
	if err != nil {
		rs.excludeProblem(&ExcludeError{Top: ts[0], Err: err})
		return
	}
	defer unlock()
	rs.syncExcludes(ts, "")
}

// syncExcludes makes the block of each work tree in ts name exactly the
// placeholder files that live records other than the one of going hold
// there: the block mirrors the records, so each change to them comes with
// this, under the lock.
func (rs Records) syncExcludes(ts []string, going string) {
	var live []record
	for _, r := range rs.others(going) {
		live = append(live, r)
	}
	for top, lines := range excludeBlocks(ts, live) {
		if err := updateExclude(top, lines); err != nil {
			rs.excludeProblem(&ExcludeError{Top: top, Err: err})
		}
	}
}

func (rs Records) excludeProblem(err error) {
	if rs.ExcludeProblem != nil {
		rs.ExcludeProblem(err)
	}
}

// overwrite writes b over the start of the file at name, made if missing,
// padded with spaces (which JSON allows after the value) to the file's
// size rather than truncated: on some filesystems freeing the blocks a
// truncate frees costs ten times the write (ext4 mounted with discard).
func overwrite(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(len(b)) {
		if fi.Size() > 64<<10 {
			err = f.Truncate(0) // a record is a few KiB: this one is not ours to pad
		} else {
			b = append(b, bytes.Repeat([]byte{' '}, int(fi.Size())-len(b))...)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// spares are the record files kept for the next writes: like the
// placeholders' stash, they spare each run an inode made and freed (see
// Stash). A run writes its record twice (Claim) and each write takes one.
var spares = [...]string{".spare", ".spare2"}

// takeSpare moves a spare, if there is one, to name. Held under lock.
func (rs Records) takeSpare(name string) {
	for _, sp := range spares {
		if renameNoReplace(filepath.Join(rs.Dir, sp), name) == nil {
			return
		}
	}
}

// keepSpare keeps the file at name as a spare, or removes it if there are
// enough. Held under lock.
func (rs Records) keepSpare(name string) {
	for _, sp := range spares {
		if renameNoReplace(name, filepath.Join(rs.Dir, sp)) == nil {
			return
		}
	}
	os.Remove(name)
}

// retire removes the record of id, keeping its file as a spare. Held
// under lock.
func (rs Records) retire(id string) {
	rs.keepSpare(filepath.Join(rs.Dir, id+".json"))
}

// handOver returns the first live record that borrowed ph, and that
// record with ph its own, to be written; others is left as it is.
func handOver(others map[string]record, ph Placeholder) (string, record) {
	for id, o := range others {
		if o.Pending {
			continue // not one that borrowed: see intended
		}
		for i, b := range o.Placeholders {
			if b.Borrowed && b.Path == ph.Path && b.Ino == ph.Ino {
				o.Placeholders = slices.Clone(o.Placeholders)
				o.Placeholders[i].Borrowed = false
				return id, o
			}
		}
	}
	return "", record{}
}

// others reads the live records other than id.
func (rs Records) others(id string) map[string]record {
	out := rs.all()
	for oid, r := range out {
		if oid == id || !r.live() {
			delete(out, oid)
		}
	}
	return out
}

// all reads every record, of live processes or not.
func (rs Records) all() map[string]record {
	out := map[string]record{}
	ents, _ := os.ReadDir(rs.Dir)
	for _, e := range ents {
		oid, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if r, err := rs.read(oid); err == nil {
			out[oid] = r
		}
	}
	return out
}

func (rs Records) read(id string) (record, error) {
	var r record
	b, err := os.ReadFile(filepath.Join(rs.Dir, id+".json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	return r, err
}

func (rs Records) write(id string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(rs.Dir, "."+id+".tmp")
	// A spare, if any, is written over rather than a file made (spares
	// are only ever renamed under the lock, which the caller holds).
	rs.takeSpare(tmp)
	if err := overwrite(tmp, b); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("recording placeholders: %w", err)
	}
	// A record written over (Claim's, once it has made what it planned;
	// a hand-over) is swapped with its new text, and its file kept as
	// a spare rather than freed.
	name := filepath.Join(rs.Dir, id+".json")
	if renameExchange(tmp, name) == nil {
		rs.keepSpare(tmp)
		return nil
	}
	return os.Rename(tmp, name)
}
