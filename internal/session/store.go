// Package session runs sandboxed commands as sessions: a detached supervisor
// per session holds the command's terminal, restarts it when it crashes,
// serves attach/stop/status on a control socket, and records what happens in
// the session's audit log. Session state lives under
// $XDG_STATE_HOME/stockade: sessions/<id>/ (session.json, the control socket,
// the supervisor's own output) and audit/<id>.jsonl, which outlives the
// session directory until `stockade prune`.
//
// State is written atomically (a temporary file renamed over session.json)
// under an flock of the session's lock file, so two stockade processes that
// race on one session never leave it half-written. A spare file with its
// space allocated stands in for the temporary file when the disk is full,
// so that the last state (why the session ended) is still written. Whether
// a session's supervisor still runs is judged by its PID and start time,
// never by the state file alone: a supervisor killed with SIGKILL leaves
// "running" behind, and list shows it as dead.
package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/proc"
)

// State is where a session is in its life.
type State string

const (
	Starting   State = "starting"
	Running    State = "running"
	Restarting State = "restarting"
	Exited     State = "exited"  // the command exited with status 0
	Stopped    State = "stopped" // stopped on request
	Failed     State = "failed"  // crashed too often, or the sandbox could not start
	Dead       State = "dead"    // the supervisor is gone without saying so (derived)
)

// Session is the content of session.json.
type Session struct {
	V         int        `json:"v"`
	ID        string     `json:"id"`
	Command   []string   `json:"command"`
	Workdir   string     `json:"workdir"`
	Home      string     `json:"home,omitempty"` // the sandbox HOME on the host
	State     State      `json:"state"`
	Started   time.Time  `json:"started"`
	Ended     *time.Time `json:"ended,omitempty"`
	PID       int        `json:"pid"`       // the supervisor
	PIDStart  string     `json:"pid_start"` // its start time, see proc.StartTime
	InitPID   int        `json:"init_pid,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Restarts  int        `json:"restarts"`
	Tripwire  bool       `json:"tripwire,omitempty"`
	Loosening []string   `json:"loosening,omitempty"`
	// Foreground: a foreground `stockade run` (Record): PID is stockade
	// itself, and there is no supervisor to attach to.
	Foreground bool `json:"foreground,omitempty"`
}

// Active reports whether the session's supervisor is (still) running.
func (s Session) Active() bool {
	switch s.State {
	case Starting, Running, Restarting:
		return proc.Alive(s.PID, s.PIDStart)
	}
	return false
}

// Effective is the state to show: Dead when the file says the session is
// live but its supervisor is gone.
func (s Session) Effective() State {
	switch s.State {
	case Starting, Running, Restarting:
		if !proc.Alive(s.PID, s.PIDStart) {
			return Dead
		}
	}
	return s.State
}

// Gone reports whether the run or session id, whose cgroup was made at
// made, has a record that says it is over: it ended, or the stockade that
// ran it is gone. One without a record is not: a foreground run's record
// is made only once its command runs. Nor is one whose record started
// more than a minute away from made: ids are short, and a record of an
// earlier run with the same id says nothing of the run starting now.
func (s Store) Gone(id string, made time.Time) bool {
	if id == "" || strings.ContainsAny(id, "/.") {
		return false
	}
	sess, err := s.Load(id)
	if err != nil || sess.ID != id || sess.Active() {
		return false
	}
	d := made.Sub(sess.Started)
	return d > -time.Minute && d < time.Minute
}

// Store is the state directory of one user.
type Store struct{ Root string }

// NewStore returns the store under stateHome ($XDG_STATE_HOME).
func NewStore(stateHome string) Store { return Store{Root: filepath.Join(stateHome, "stockade")} }

func (s Store) sessions() string        { return filepath.Join(s.Root, "sessions") }
func (s Store) Dir(id string) string    { return filepath.Join(s.sessions(), id) }
func (s Store) Socket(id string) string { return filepath.Join(s.Dir(id), "control.sock") }
func (s Store) AuditDir() string        { return filepath.Join(s.Root, "audit") }
func (s Store) Audit(id string) string  { return filepath.Join(s.AuditDir(), id+".jsonl") }
func (s Store) file(id string) string   { return filepath.Join(s.Dir(id), "session.json") }

// oldDenials is where an earlier stockade kept the denials files of runs
// on the host (now they live only in the sandbox); Prune removes what a
// killed supervisor left there, and the directory once it is empty.
func (s Store) oldDenials() string        { return filepath.Join(s.Root, "denials") }
func (s Store) lockFile(id string) string { return filepath.Join(s.Dir(id), "lock") }

// Create makes the directory of a new session and writes its first state.
// It fails if the ID exists: IDs are random, a clash is retried by the caller.
func (s Store) Create(sess Session) error {
	for _, d := range []string{s.sessions(), s.AuditDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := os.Mkdir(s.Dir(sess.ID), 0o700); err != nil {
		return fmt.Errorf("creating session %s: %w", sess.ID, err)
	}
	sess.V = 1
	if err := s.write(sess); err != nil {
		return err
	}
	if !sess.Foreground {
		// A foreground run's end is on the user's terminal, and its
		// record is made and ended within the run: the spare's blocks,
		// allocated and freed, would cost each run a third of a
		// millisecond (a freed extent is discarded).
		s.makeSpare(sess.ID)
	}
	return nil
}

// write replaces session.json atomically. When that fails (the disk is
// full: the sandboxed command can fill the filesystem the state directory
// is on), the state goes into the spare instead: the final state of a
// session the full disk ended is the one that must not be lost.
func (s Store) write(sess Session) error {
	b, err := json.MarshalIndent(sess, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	err = s.replace(sess.ID, b)
	if err != nil && s.replaceFromSpare(sess.ID, b) == nil {
		err = nil
	}
	if err == nil && sess.ended() {
		os.Remove(s.spare(sess.ID)) // no state comes after the last
	}
	return err
}

// ended reports whether s is a state the session does not leave.
func (s Session) ended() bool {
	return s.State == Exited || s.State == Stopped || s.State == Failed
}

// replace writes b to a new file and renames it over session.json.
func (s Store) replace(id string, b []byte) error {
	tmp, err := os.CreateTemp(s.Dir(id), ".session-*.json")
	if err != nil {
		return fmt.Errorf("writing session %s: %w", id, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing session %s: %w", id, err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), s.file(id)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing session %s: %w", id, err)
	}
	return nil
}

// spareSize is the space kept allocated in the spare: room for a state
// with a long command line and a long reason.
const spareSize = 64 << 10

func (s Store) spare(id string) string { return filepath.Join(s.Dir(id), ".session-spare.json") }

// makeSpare creates the spare with its space allocated. Best effort: without
// it, a full disk can keep a session's last state from being written, and
// list shows the session as dead rather than why it ended.
func (s Store) makeSpare(id string) error {
	f, err := os.OpenFile(s.spare(id), os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := allocate(f, spareSize, false); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// replaceFromSpare writes b over the start of the spare, whose blocks are
// allocated, cuts it to size and renames it over session.json: as atomic as
// replace, and it needs no new space. A new spare is made if there is room.
func (s Store) replaceFromSpare(id string, b []byte) error {
	f, err := os.OpenFile(s.spare(id), os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Truncate(int64(len(b)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(s.spare(id), s.file(id))
	}
	if err != nil {
		return err
	}
	s.makeSpare(id)
	return nil
}

// rewrite writes the last state of a foreground run over session.json in
// place, padded with spaces to at least the length it had, so that no
// truncate is needed. No new file is renamed over it: on ext4 without a
// journal an inode freed in the last half minute makes every later
// allocation in its group slower, and a harness starting runs in a row
// would pay that on every file the next runs create. Nothing else writes
// a foreground run's entry, and a reader that meets the write half done
// reads again (Load). When the write cannot be done in place, the entry
// is replaced as usual.
func (s Store) rewrite(sess Session) error {
	b, err := json.MarshalIndent(sess, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.file(sess.ID), os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return s.write(sess)
	}
	var st unix.Stat_t
	if err = unix.Fstat(int(f.Fd()), &st); err == nil {
		if pad := int(st.Size) - len(b) - 1; pad > 0 {
			b = append(b, bytes.Repeat([]byte{' '}, pad)...)
		}
		b = append(b, '\n')
		_, err = f.WriteAt(b, 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s.write(sess)
	}
	return nil
}

// Load reads a session's state.
func (s Store) Load(id string) (Session, error) {
	var sess Session
	for try := 0; ; try++ {
		b, err := os.ReadFile(s.file(id))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return Session{}, fmt.Errorf("no session %s; 'stockade list --all' shows them", id)
			}
			return Session{}, fmt.Errorf("reading session %s: %w", id, err)
		}
		err = json.Unmarshal(b, &sess)
		if err == nil {
			return sess, nil
		}
		// A foreground run's last state is written in place
		// (rewrite): a read in the middle of it is read again.
		if try == 2 {
			return Session{}, fmt.Errorf("reading session %s: %s is corrupt: %w", id, s.file(id), err)
		}
		time.Sleep(time.Millisecond)
	}
}

// Update changes a session's state under its lock.
func (s Store) Update(id string, change func(*Session) error) error {
	unlock, err := s.lock(id)
	if err != nil {
		return err
	}
	defer unlock()
	sess, err := s.Load(id)
	if err != nil {
		return err
	}
	if err := change(&sess); err != nil {
		return err
	}
	return s.write(sess)
}

func (s Store) lock(id string) (func(), error) {
	f, err := os.OpenFile(s.lockFile(id), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking session %s: %w", id, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking session %s: %w", id, os.NewSyscallError("flock", err))
	}
	return func() { f.Close() }, nil
}

// List returns every session, newest first.
func (s Store) List() ([]Session, error) {
	ents, err := os.ReadDir(s.sessions())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var out []Session
	for _, e := range ents {
		if sess, err := s.Load(e.Name()); err == nil {
			out = append(out, sess)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

// Resolve turns an ID or an unambiguous prefix of one into the ID.
func (s Store) Resolve(prefix string) (string, error) {
	if prefix == "" || strings.ContainsAny(prefix, "/.") {
		return "", fmt.Errorf("%q is not a session ID; 'stockade list' shows them", prefix)
	}
	ents, _ := os.ReadDir(s.sessions())
	var found []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			if e.Name() == prefix {
				return prefix, nil
			}
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no session %s; 'stockade list --all' shows them", prefix)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("session prefix %s is ambiguous: %s; give more characters", prefix, strings.Join(found, ", "))
}

// Delete removes a session's state directory and its transcript; its audit
// log stays.
func (s Store) Delete(id string) error {
	sess, err := s.Load(id)
	if err != nil {
		return err
	}
	if sess.Active() {
		return fmt.Errorf("session %s is %s; stop it first: stockade stop -s %s", id, sess.State, id)
	}
	if err := removeTranscript(s, id); err != nil {
		return err
	}
	return os.RemoveAll(s.Dir(id))
}

// Prune removes every session that is not running, and its audit log. It
// returns the IDs it removed.
func (s Store) Prune() ([]string, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var gone []string
	live := map[string]bool{}
	for _, sess := range all {
		if sess.Active() {
			live[sess.ID] = true
			continue
		}
		if err := os.RemoveAll(s.Dir(sess.ID)); err != nil {
			return gone, fmt.Errorf("removing session %s: %w", sess.ID, err)
		}
		os.Remove(s.Audit(sess.ID))
		os.Remove(s.Audit(sess.ID) + ".head")
		os.Remove(filepath.Join(s.oldDenials(), sess.ID))
		gone = append(gone, sess.ID)
	}
	// Audit logs of sessions deleted earlier go too.
	ents, _ := os.ReadDir(s.AuditDir())
	for _, e := range ents {
		id, _, _ := strings.Cut(e.Name(), ".")
		if !live[id] {
			if _, err := os.Stat(s.Dir(id)); errors.Is(err, os.ErrNotExist) {
				os.Remove(filepath.Join(s.AuditDir(), e.Name()))
			}
		}
	}
	os.Remove(s.oldDenials())
	return gone, nil
}
