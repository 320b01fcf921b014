package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// canonical returns p with every symlink in it resolved, as the host's own
// tools would resolve it, so that the executor can open it with no symlink
// in any component. The components of a path the user gave are the user's
// (a /home that is a link to /usr/home), except below a tree the sandbox
// can write (hostile, canonical): a symlink there was possibly planted by
// an earlier session, and following it would let the agent choose what is
// mounted (a --ro or a project's ro entry "docs" turned into a link to
// ~/.ssh). Such a path is refused.
func canonical(host Host, p string, hostile []string) (string, error) {
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur, hops := "/", 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		if c == "" {
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := host.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// The rest is taken as it is; opening it will fail.
			return filepath.Join(append([]string{next}, parts...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		for _, h := range hostile {
			if next != h && within(next, h) {
				return "", fmt.Errorf("%s: %s is a symlink inside %s, which the sandbox can write; stockade never follows a link there: give the path it points to", p, next, h)
			}
		}
		if hops++; hops > maxLinks {
			return "", fmt.Errorf("resolving %s: too many levels of symbolic links", p)
		}
		l, err := host.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", p, err)
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(cur, l)
		}
		parts = append(strings.Split(strings.TrimPrefix(filepath.Clean(l), "/"), "/"), parts...)
		cur = "/"
	}
	return cur, nil
}

// Trees are the host trees of a Config, canonical (see canonical), and
// where each appears inside.
type Trees struct {
	Workdir    string
	RW, RO     []string
	HomeSource string
}

// resolveTrees makes the trees of cfg canonical: first the workdir (the
// user's), then each writable tree (refusing a link in those before it),
// then the read-only ones (refusing a link in any writable tree).
func resolveTrees(cfg Config, host Host) (Trees, error) {
	var t Trees
	var err error
	if t.Workdir, err = canonical(host, cfg.Workdir, nil); err != nil {
		return t, err
	}
	hostile := []string{t.Workdir}
	for _, p := range cfg.RW {
		c, err := canonical(host, p, hostile)
		if err != nil {
			return t, fmt.Errorf("--rw %w", err)
		}
		t.RW = append(t.RW, c)
		hostile = append(hostile, c)
	}
	if cfg.HomeSource != "" {
		if t.HomeSource, err = canonical(host, cfg.HomeSource, hostile); err != nil {
			return t, fmt.Errorf("sandbox HOME %w", err)
		}
		hostile = append(hostile, t.HomeSource)
	}
	for _, p := range cfg.RO {
		c, err := canonical(host, p, hostile)
		if err != nil {
			return t, fmt.Errorf("--ro %w", err)
		}
		t.RO = append(t.RO, c)
	}
	return t, nil
}

// Resolve is canonical for a path outside the plan (stockade's own
// directories): p with every symlink resolved, refused when one lies inside
// a tree of writable (canonical paths), which the sandbox may have planted.
func Resolve(host Host, p string, writable []string) (string, error) {
	return canonical(host, p, writable)
}
