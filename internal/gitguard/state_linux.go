package gitguard

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/stockade-dev/stockade/internal/beneath"
	"golang.org/x/sys/unix"
)

// Limits of what is read and kept.
const (
	maxRead = 1 << 20  // bytes of one file read to judge it or to put it back
	maxKept = 64 << 20 // bytes kept by Before in all
)

type kind uint8

const (
	absent kind = iota
	regular
	directory
	symlink
	other
)

// state is what one path held when it was looked at.
type state struct {
	kind  kind
	mode  uint32 // permission bits
	ino   uint64
	size  int64
	ctime unix.Timespec
	data  []byte // a regular file's content, up to maxRead
	big   bool   // a regular file larger than maxRead: data is nil
	link  string // a symlink's target
}

// same reports whether b is what a was. A regular file is the same when
// its inode, size and change time are (nothing can write it without moving
// the change time on), or when its content is: the tripwire may have put
// back a protected file with its old content.
func same(a, b *state) bool {
	if a.kind != b.kind || a.mode != b.mode {
		return false
	}
	switch a.kind {
	case symlink:
		return a.link == b.link
	case regular:
		if a.ino == b.ino && a.size == b.size && a.ctime == b.ctime {
			return true
		}
		return a.data != nil && b.data != nil && !a.big && !b.big && bytes.Equal(a.data, b.data)
	}
	return true
}

// look describes rel without following a symlink, with the content of a
// regular file when withData is set. A path that does not exist, or whose
// parent is not a directory, is absent.
func look(root *beneath.Root, rel string, withData bool) (*state, error) {
	st, err := root.Lstat(rel)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return &state{kind: absent}, nil
	}
	if err != nil {
		return nil, err
	}
	s := fromStat(&st)
	switch s.kind {
	case symlink:
		s.link, err = root.Readlink(rel)
	case regular:
		if withData {
			err = s.read(root, rel)
		}
	}
	return s, err
}

func fromStat(st *unix.Stat_t) *state {
	s := &state{mode: st.Mode & 0o7777, ino: st.Ino, size: st.Size, ctime: st.Ctim}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		s.kind = regular
	case unix.S_IFDIR:
		s.kind = directory
	case unix.S_IFLNK:
		s.kind = symlink
	default:
		s.kind = other
	}
	return s
}

// read fills in the content of the regular file rel. O_NONBLOCK: if a FIFO
// was put there since the lstat, the open must not wait for a writer.
func (s *state) read(root *beneath.Root, rel string) error {
	f, err := root.OpenFile(rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	*s = *fromStat(&st) // what was opened, should it differ from what was stat'ed
	if s.kind != regular {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRead+1))
	if err != nil {
		return err
	}
	if len(data) > maxRead {
		s.big = true
		return nil
	}
	s.data = data
	return nil
}

// dirent is one entry of a directory listing.
type dirent struct {
	name string
	kind kind
}

// list reads the directory rel with getdents into buf, sorted by name. An
// entry whose type the filesystem does not report is stat'ed below the
// directory's descriptor, never followed.
func list(root *beneath.Root, rel string, buf []byte) ([]dirent, error) {
	f, err := root.OpenFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: root.Join(rel), Err: err}
		}
		if n <= 0 {
			break
		}
		out = parseDirents(fd, buf[:n], out)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// parseDirents appends the entries of a getdents64 buffer: ino (8 bytes),
// off (8), reclen (2), type (1), name (NUL-terminated).
func parseDirents(dirfd int, buf []byte, out []dirent) []dirent {
	for len(buf) >= 19 {
		reclen := int(buf[16]) | int(buf[17])<<8
		if reclen < 19 || reclen > len(buf) {
			break
		}
		typ := buf[18]
		name := buf[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		buf = buf[reclen:]
		n := string(name)
		if n == "." || n == ".." {
			continue
		}
		out = append(out, dirent{name: n, kind: direntKind(dirfd, n, typ)})
	}
	return out
}

func direntKind(dirfd int, name string, typ byte) kind {
	switch typ {
	case unix.DT_REG:
		return regular
	case unix.DT_DIR:
		return directory
	case unix.DT_LNK:
		return symlink
	case unix.DT_UNKNOWN:
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return other
		}
		return fromStat(&st).kind
	}
	return other
}

// join is path.Join for paths relative to the workdir, "." being the
// workdir itself.
func join(dir, name string) string { return path.Join(dir, name) }

// inside resolves target, a path git reads from a file in the directory
// dir (relative to the workdir), lexically: a relative one against dir, an
// absolute one against the workdir's own path. It returns the path
// relative to the workdir, or false when it leads outside.
func inside(workdir, dir, target string) (string, bool) {
	var p string
	if strings.HasPrefix(target, "~") || strings.HasPrefix(target, "%(prefix)") {
		return "", false // a home or install directory: not the project's
	}
	if path.IsAbs(target) {
		t := path.Clean(target)
		switch {
		case t == workdir:
			return ".", true
		case strings.HasPrefix(t, workdir+"/"):
			p = t[len(workdir)+1:]
		default:
			return "", false
		}
	} else {
		p = path.Join(dir, target)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}
