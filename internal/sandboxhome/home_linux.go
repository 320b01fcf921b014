//go:build linux

package sandboxhome

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// Home is a sandbox HOME held open by its directory descriptor. Its
// methods write below it through package beneath only: no path below the
// HOME is ever resolved through a symlink.
type Home struct {
	// Path is the HOME on the host, for the mount and for messages. The
	// directories above it are stockade's and no sandbox can write them.
	Path string
	root *beneath.Root
	warn func(string)
}

// retries bounds the attempts to put a directory in place of what a
// running session keeps putting back.
const retries = 3

// Open opens the HOME rel (see Rel) below dir, stockade's data directory,
// creating what is missing, and reports what it replaces to warn. dir is
// the user's own and is created as usual; below it, every component is
// created and opened without following a link, and a link or a file in
// the way is an error: no sandbox can write there, so something else put
// it there, and stockade does not guess what.
func Open(dir, rel string, warn func(string)) (*Home, error) {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	fail := func(err error) (*Home, error) {
		if beneath.IsLoop(err) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("opening the sandbox HOME %s: %w; a symlink or a file stands in its path: move it away", path, err)
		}
		return nil, fmt.Errorf("opening the sandbox HOME %s: %w", path, err)
	}
	top, err := beneath.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fail(err)
		}
		top, err = beneath.OpenRoot(dir)
	}
	if err != nil {
		return fail(err)
	}
	defer top.Close()
	root, err := top.OpenRoot(rel)
	if errors.Is(err, fs.ErrNotExist) {
		if err := top.MkdirAll(rel, 0o700); err != nil {
			return fail(err)
		}
		root, err = top.OpenRoot(rel)
	}
	if err != nil {
		return fail(err)
	}
	return &Home{Path: path, root: root, warn: warn}, nil
}

// Close releases the HOME's directory.
func (h *Home) Close() error { return h.root.Close() }

// WriteGuide writes the agent's guide at rel, replacing whatever is there:
// the write goes to a new file renamed over rel, so a symlink at rel, or a
// hard link to a file elsewhere, is replaced and never written through.
// Every directory on the way is made a real one (see dir). A directory at
// rel itself is an error that names the fix: it may hold the user's work.
func (h *Home) WriteGuide(rel, text string) error {
	return h.replace(rel, text, 0o600, "the agent's guide")
}

// WriteShim writes an executable script at rel the way WriteGuide writes
// the guide: a Slurm shim of a sandbox started with --slurm (package
// slurm). What the sandbox makes of it is its own business: a shim holds
// no secret and the chaperon checks every request.
func (h *Home) WriteShim(rel, text string) error {
	return h.replace(rel, text, 0o700, "a Slurm shim")
}

// replace writes text at rel as a new file with mode, for WriteGuide and
// WriteShim; what names the file in messages.
func (h *Home) replace(rel, text string, mode uint32, what string) error {
	if err := h.dir(path.Dir(rel)); err != nil {
		return err
	}
	st, err := h.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return h.fail("writing "+what, err)
	case isDir(st):
		return fmt.Errorf("writing %s: %s is a directory, where stockade writes it; remove it (rm -r %s) and start again",
			what, h.root.Join(rel), h.root.Join(rel))
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		h.replaced(rel, st, what)
	case st.Nlink > 1:
		h.warn(fmt.Sprintf("sandbox HOME: %s had %d names (a hard link); stockade wrote %s as a new file, and the other names keep what they held",
			h.root.Join(rel), st.Nlink, what))
	}
	if err := h.root.WriteFile(rel, []byte(text), mode); err != nil {
		return h.fail("writing "+what, err)
	}
	return nil
}

// Seed creates each file of files (path relative to the HOME → content)
// where nothing is: the first-run files of an agent. Whatever already
// stands at the path (a file, a symlink, a directory) counts as the user's
// and is neither opened nor replaced; the file is created with O_EXCL,
// so it is never written through a link either. The directories on the
// way are made real ones (see dir).
func (h *Home) Seed(files map[string]string) error {
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	for _, rel := range rels {
		if _, err := h.root.Lstat(rel); err == nil {
			continue
		}
		if err := h.dir(path.Dir(rel)); err != nil {
			return err
		}
		err := h.root.CreateFile(rel, []byte(files[rel]+"\n"), 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return h.fail("preparing the sandbox HOME", err)
		}
	}
	return nil
}

// dir makes rel a directory, one component at a time. A symlink or any
// other non-directory in the way was left by the sandboxed command (the
// HOME is stockade's, and only a sandbox writes below it): it is removed,
// never followed, and named in a warning.
func (h *Home) dir(rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if err := h.component(p); err != nil {
			return err
		}
	}
	return nil
}

// component makes p a directory; its parent is one already.
func (h *Home) component(p string) error {
	for range retries {
		st, err := h.root.Lstat(p)
		switch {
		case err == nil && isDir(st):
			return nil
		case err == nil:
			h.replaced(p, st, "a directory")
			if err := h.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return h.fail("preparing the sandbox HOME", err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return h.fail("preparing the sandbox HOME", err)
		}
		err = h.root.Mkdir(p, 0o700)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return h.fail("preparing the sandbox HOME", err)
		}
	}
	return fmt.Errorf("preparing the sandbox HOME: %s keeps changing while stockade puts a directory there; stop the sessions of this project and start again", h.root.Join(p))
}

// replaced warns that what stood at rel (st) makes way for what.
func (h *Home) replaced(rel string, st unix.Stat_t, what string) {
	kind := "a file"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, _ := h.root.Readlink(rel)
		kind = fmt.Sprintf("a symlink (-> %s)", target)
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		kind = "a special file"
	}
	h.warn(fmt.Sprintf("sandbox HOME: replaced %s at %s with %s; a command in the sandbox put it there, and stockade never writes through it",
		kind, h.root.Join(rel), what))
}

// fail words an error below the HOME; a link met halfway (ELOOP) means the
// sandbox changed the path while stockade wrote it.
func (h *Home) fail(doing string, err error) error {
	if beneath.IsLoop(err) {
		return fmt.Errorf("%s: %w; a symlink appeared in the sandbox HOME while stockade wrote it: stop the sessions of this project and start again", doing, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

func isDir(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
