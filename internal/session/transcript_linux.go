package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// transcript appends a session's output to its transcript files.
type transcript struct {
	dir  *beneath.Root
	id   string
	f    *os.File
	size int64
}

// openTranscript creates the transcript of session id.
func openTranscript(store Store, id string) (*transcript, error) {
	dir, err := beneath.OpenRoot(store.AuditDir())
	if err != nil {
		return nil, fmt.Errorf("opening the transcript: %w", err)
	}
	t := &transcript{dir: dir, id: id}
	if err := t.create(); err != nil {
		dir.Close()
		return nil, err
	}
	return t, nil
}

func (t *transcript) create() error {
	f, err := t.dir.OpenFile(transcriptName(t.id), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("creating the transcript: %w", err)
	}
	t.f, t.size = f, 0
	return nil
}

// write appends p, rotating when the current file would pass
// transcriptMax. After an error nothing more is written.
func (t *transcript) write(p []byte) error {
	for len(p) > 0 {
		if t.size >= transcriptMax {
			if err := t.rotate(); err != nil {
				return err
			}
		}
		n := min(int64(len(p)), transcriptMax-t.size)
		if _, err := t.f.Write(p[:n]); err != nil {
			return fmt.Errorf("writing the transcript: %w", err)
		}
		t.size += n
		p = p[n:]
	}
	return nil
}

// rotate makes the current file the old one (replacing the old one) and
// starts a new one.
func (t *transcript) rotate() error {
	t.f.Close()
	t.f = nil
	if err := t.dir.Rename(transcriptName(t.id), transcriptOldName(t.id), 0); err != nil {
		return fmt.Errorf("rotating the transcript: %w", err)
	}
	return t.create()
}

func (t *transcript) close() {
	if t.f != nil {
		t.f.Close()
	}
	t.dir.Close()
}

// CopyOutput writes the transcript of session id to w, oldest first.
func CopyOutput(store Store, id string, w io.Writer) error {
	dir, err := beneath.OpenRoot(store.AuditDir())
	if err != nil {
		return fmt.Errorf("reading the output of session %s: %w", id, err)
	}
	defer dir.Close()
	found := false
	for _, name := range []string{transcriptOldName(id), transcriptName(id)} {
		f, err := dir.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the output of session %s: %w", id, err)
		}
		found = true
		_, err = io.Copy(w, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading the output of session %s: %w", id, err)
		}
	}
	if !found {
		return fmt.Errorf("session %s has no output kept: a foreground run's output goes to its terminal only, and 'stockade delete' removes a session's", id)
	}
	return nil
}

// removeTranscript removes the transcript of session id.
func removeTranscript(store Store, id string) error {
	dir, err := beneath.OpenRoot(store.AuditDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	for _, name := range []string{transcriptOldName(id), transcriptName(id)} {
		if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the output of session %s: %w", id, err)
		}
	}
	return nil
}
