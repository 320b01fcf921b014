package mount

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Placeholder is an empty file or directory created on the host so that a
// protected path which does not exist yet can still be made read-only: a
// project without .vscode/ must not get a .vscode/tasks.json from the agent.
// It is removed again when the sandbox ends, unless something outside the
// sandbox has put content in it meanwhile.
type Placeholder struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir"`
	Ino  uint64 `json:"ino"`
	// Borrowed: another sandbox of the same project made it a moment
	// earlier; that one removes it, or hands it over (see Records).
	Borrowed bool `json:"borrowed,omitempty"`
}

// Split sorts missing protected paths into those that get a placeholder
// and those that cannot. A missing path whose parent directory exists under
// a writable root gets one: an empty directory for a directory pattern
// (".vscode/"), an empty file for a file pattern ("CLAUDE.md"; "{}" for a
// .json file, so that the tools which read it still parse it). Paths below
// a missing directory get none: creating .git/ in a directory that is not a
// repository would break `git init`; those are reported after the run
// instead (see Missing).
func Split(missing []MissingPath) (planned []Placeholder, without []MissingPath) {
	for _, p := range missing {
		if realDirUnder(filepath.Dir(p.Path), p.Root) {
			planned = append(planned, Placeholder{Path: p.Path, Dir: strings.HasSuffix(p.Pattern, "/")})
		} else {
			without = append(without, p)
		}
	}
	return planned, without
}

// Create makes the planned placeholders (see Split), taking them from
// stash when it has them. One that another sandbox of this project made a
// moment earlier is shared (Borrowed). On error, the placeholders made so
// far are removed again.
func Create(planned []Placeholder, stash Stash) ([]Placeholder, error) {
	var made []Placeholder
	stash.prepare()
	for _, p := range planned {
		ph, err := stash.take(p)
		if err != nil {
			ph, err = createPlaceholder(p.Path, p.Dir)
		}
		if errors.Is(err, fs.ErrExist) {
			// Another sandbox of this project was quicker: share its.
			if fi, lerr := os.Lstat(p.Path); lerr == nil && fi.IsDir() == p.Dir {
				made = append(made, Placeholder{Path: p.Path, Dir: p.Dir, Ino: inode(fi), Borrowed: true})
				continue
			}
		}
		if err != nil {
			RemovePlaceholders(made, stash)
			return nil, fmt.Errorf("creating placeholder for protected path %s: %w", p.Path, err)
		}
		made = append(made, ph)
	}
	return made, nil
}

// WithPlaceholders is host as it will be once the planned placeholders
// exist, so that a plan can be made while they are being created.
func WithPlaceholders(host Host, planned []Placeholder) Host {
	if len(planned) == 0 {
		return host
	}
	h := withPlaceholders{Host: host, at: map[string]Placeholder{}, in: map[string][]Placeholder{}}
	for _, p := range planned {
		h.at[p.Path] = p
		h.in[filepath.Dir(p.Path)] = append(h.in[filepath.Dir(p.Path)], p)
	}
	return h
}

type withPlaceholders struct {
	Host
	at map[string]Placeholder
	in map[string][]Placeholder
}

func (h withPlaceholders) Lstat(p string) (fs.FileInfo, error) {
	if ph, ok := h.at[p]; ok {
		if fi, err := h.Host.Lstat(p); err == nil {
			return fi, nil // it exists already: as it is
		}
		return placeholderInfo(ph), nil
	}
	return h.Host.Lstat(p)
}

func (h withPlaceholders) Stat(p string) (fs.FileInfo, error) {
	if ph, ok := h.at[p]; ok {
		if fi, err := h.Host.Stat(p); err == nil {
			return fi, nil
		}
		return placeholderInfo(ph), nil
	}
	return h.Host.Stat(p)
}

func (h withPlaceholders) ReadDir(dir string) ([]fs.DirEntry, error) {
	ents, err := h.Host.ReadDir(dir)
	if err != nil || len(h.in[dir]) == 0 {
		return ents, err
	}
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name()] = true
	}
	for _, p := range h.in[dir] {
		if !have[filepath.Base(p.Path)] {
			ents = append(ents, fs.FileInfoToDirEntry(placeholderInfo(p)))
		}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// placeholderInfo describes a placeholder that is yet to be made.
type placeholderInfo Placeholder

func (p placeholderInfo) Name() string { return filepath.Base(p.Path) }
func (p placeholderInfo) Size() int64  { return 0 }
func (p placeholderInfo) Mode() fs.FileMode {
	if p.Dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (p placeholderInfo) ModTime() time.Time { return time.Time{} }
func (p placeholderInfo) IsDir() bool        { return p.Dir }
func (p placeholderInfo) Sys() any           { return nil }

// MissingPath is a protected path that does not exist.
type MissingPath struct {
	Root, Pattern, Path string
}

// Missing lists the protected paths (non-glob patterns) that do not exist
// under the writable roots. Whatever of them exists after a run was created
// by the command, unprotected, and is worth a warning.
func Missing(cfg Config) []MissingPath {
	var out []MissingPath
	for _, root := range append([]string{cfg.Workdir}, cfg.RW...) {
		if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
			continue
		}
		for _, pat := range cfg.Protect {
			if filepath.IsAbs(pat) || strings.ContainsAny(pat, "*?[") || strings.Contains(pat, "..") {
				continue
			}
			p := filepath.Join(root, strings.TrimSuffix(pat, "/"))
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				out = append(out, MissingPath{Root: root, Pattern: pat, Path: p})
			}
		}
	}
	return out
}

// realDirUnder reports whether dir is a directory reached from root without
// following a symlink.
func realDirUnder(dir, root string) bool {
	for d := dir; within(d, root); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			return false
		}
		if d == root {
			return true
		}
	}
	return false
}

func createPlaceholder(p string, dir bool) (Placeholder, error) {
	if dir {
		// Writable for the user outside (an editor may want it while the
		// sandbox runs; a placeholder given content is left in place), and
		// read-only inside, where it is a read-only bind.
		if err := os.Mkdir(p, 0o755); err != nil {
			return Placeholder{}, err
		}
	} else if filepath.Ext(p) == ".json" {
		// Written unnamed (O_TMPFILE), then linked into place: the name
		// never exists without its content, so a reader (another stockade
		// loading a .stockade.json placeholder) never sees an empty file.
		if err := createLinked(p, placeholderJSON); err != nil {
			return Placeholder{}, err
		}
	} else {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return Placeholder{}, err
		}
		f.Close()
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return Placeholder{}, err
	}
	return Placeholder{Path: p, Dir: dir, Ino: inode(fi)}, nil
}

// createRenamed is createLinked through a named temporary file.
func createRenamed(p, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".stockade-placeholder-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Link(tmp.Name(), p)
	}
	return err
}

// Stash keeps the placeholders of earlier runs, in a directory of the
// user's own, to be moved into place again (rename(2), never replacing
// anything) instead of being made anew. Making and deleting inodes is what
// costs on some filesystems (ext4 without a journal skips every inode freed
// in the last minute when it allocates one), and a harness or an agent may
// start many short runs in a row. A stash on another filesystem than the
// project (EXDEV), or the zero Stash, makes and removes as usual.
type Stash struct{ Dir string }

// key is where the placeholder for p waits in the stash: one per path and
// kind.
func (s Stash) key(p Placeholder) string {
	kind := "f"
	if p.Dir {
		kind = "d"
	} else if filepath.Ext(p.Path) == ".json" {
		kind = "j"
	}
	h := sha256.Sum256([]byte(p.Path))
	return filepath.Join(s.Dir, hex.EncodeToString(h[:12])+"."+kind)
}

func (s Stash) prepare() {
	if s.Dir != "" {
		os.Mkdir(s.Dir, 0o700)
	}
}

// stashable reports whether a placeholder is exactly as stockade made it,
// to be used again: no other link to it, and a .json one still "{}".
func stashable(ph Placeholder, fi fs.FileInfo) bool {
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || (!ph.Dir && st.Nlink != 1) {
		return false
	}
	if want := placeholderContent(ph.Path); want != "" {
		b, err := os.ReadFile(ph.Path)
		return err == nil && string(b) == want
	}
	return true
}

// placeholderContent is what a placeholder at p holds.
func placeholderContent(p string) string {
	if filepath.Ext(p) == ".json" {
		return placeholderJSON
	}
	return ""
}

// placeholderJSON is the content of a .json placeholder: valid, and empty.
const placeholderJSON = "{}\n"

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// RemovePlaceholders removes each placeholder that is still the empty file or
// directory stockade made; anything else is left alone and reported. (They
// are removed one after the other: entries of one directory are changed
// under its lock anyway.)
func RemovePlaceholders(ps []Placeholder, stash Stash) error {
	var errs []error
	for _, ph := range ps {
		if !ph.Borrowed {
			errs = append(errs, removePlaceholder(ph, stash))
		}
	}
	return errors.Join(errs...)
}

func removePlaceholder(ph Placeholder, stash Stash) error {
	fi, err := os.Lstat(ph.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || inode(fi) != ph.Ino || fi.IsDir() != ph.Dir || (!ph.Dir && fi.Size() != int64(len(placeholderContent(ph.Path)))) {
		return fmt.Errorf("placeholder %s changed outside the sandbox; left in place", ph.Path)
	}
	if ph.Dir {
		// One given content outside stays where it is.
		if d, err := os.Open(ph.Path); err == nil {
			names, _ := d.Readdirnames(1)
			d.Close()
			if len(names) > 0 {
				return fmt.Errorf("placeholder %s changed outside the sandbox; left in place", ph.Path)
			}
		}
	}
	if stashable(ph, fi) && stash.put(ph) {
		return nil
	}
	remove := syscall.Unlink
	if ph.Dir {
		remove = syscall.Rmdir // fails on a directory that is no longer empty
	}
	if err := remove(ph.Path); err != nil && err != syscall.ENOENT {
		return fmt.Errorf("removing placeholder %s: %w", ph.Path, err)
	}
	return nil
}

// Watched lists the host paths a tripwire watches for cfg: every protected
// and masked path that exists under a root, and every protected path that
// does not (its creation is a change too).
func Watched(cfg Config) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	roots := append([]string{cfg.Workdir}, cfg.RW...)
	for _, root := range roots {
		for _, f := range expand(OS{}, root, cfg.Protect) {
			add(f.path)
		}
	}
	for _, root := range append(roots, cfg.RO...) {
		for _, f := range expand(OS{}, root, cfg.Mask) {
			add(f.path)
		}
	}
	for _, m := range Missing(cfg) {
		add(m.Path)
	}
	return out
}
