package session

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
)

// TestRecordEndsInPlace checks that a foreground run's last state is written
// over its entry in place, not by a new file renamed over it: on ext4
// without a journal every inode freed in the last half minute slows each
// later allocation in its group, and a harness starting runs in a row pays
// that on every file the next runs create.
func TestRecordEndsInPlace(t *testing.T) {
	store := Store{Root: t.TempDir()}
	rec := Begin(Config{Store: store, ID: "a1b2c3"}, Session{Command: []string{"/bin/true"}})
	rec.Started("enforcement", nil)
	rec.Open()
	var first uint64
	for deadline := time.Now().Add(10 * time.Second); ; {
		if fi, err := os.Stat(store.file("a1b2c3")); err == nil {
			if sess, err := store.Load("a1b2c3"); err == nil && sess.State == Running {
				first = fi.Sys().(*syscall.Stat_t).Ino
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the entry was not made")
		}
		time.Sleep(time.Millisecond)
	}
	rec.Finish(3, "exited")
	fi, err := os.Stat(store.file("a1b2c3"))
	if err != nil {
		t.Fatal(err)
	}
	if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != first {
		t.Errorf("session.json is inode %d at the end, %d at the start: it was replaced, not written in place", ino, first)
	}
	sess, err := store.Load("a1b2c3")
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != Exited || sess.ExitCode == nil || *sess.ExitCode != 3 || sess.Ended == nil {
		t.Errorf("last state = %+v, want exited with status 3", sess)
	}
	entries, _ := os.ReadDir(store.Dir("a1b2c3"))
	for _, e := range entries {
		if e.Name() != "session.json" {
			t.Errorf("the entry holds %s besides session.json", e.Name())
		}
	}
	rep, err := audit.VerifyFile(store.Audit("a1b2c3"))
	if err != nil || rep.Err() != nil {
		t.Errorf("audit log: %v, %v", err, rep.Err())
	}
}

// TestLoadShorterState checks that a state written in place over a longer
// one still reads: the rest is padded with spaces, never left behind.
func TestLoadShorterState(t *testing.T) {
	store := Store{Root: t.TempDir()}
	long := Session{ID: "d4e5f6", Foreground: true, State: Running, Command: []string{"sh", "-c", string(make([]byte, 300))}}
	if err := store.Create(long); err != nil {
		t.Fatal(err)
	}
	short := Session{ID: "d4e5f6", Foreground: true, State: Exited, Command: []string{"sh"}}
	if err := store.rewrite(short); err != nil {
		t.Fatal(err)
	}
	got, err := store.Load("d4e5f6")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != Exited || len(got.Command) != 1 {
		t.Errorf("read back %+v, want the short state", got)
	}
}
