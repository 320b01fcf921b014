package sandboxhome

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// The two places a HOME can be, relative to stockade's data directory.
const (
	ProjectDir = "project-home" // project-home/<name>/<key>: the default
	SharedDir  = "home"         // home/<name>: shared by every project
)

// keyBase is the longest base name a key keeps, so that keys stay readable.
const keyBase = 32

// Key names a project's HOME: the base name of the workdir's canonical path
// (every symlink resolved), for the reader, and 12 hex digits of its
// SHA-256, so that two projects of the same name do not meet.
func Key(workdir string) (string, error) {
	canon, err := filepath.EvalSymlinks(workdir)
	if err != nil {
		return "", fmt.Errorf("naming the sandbox HOME of %s: %w", workdir, err)
	}
	return keyOf(canon), nil
}

// keyOf is Key of a path that is canonical already.
func keyOf(canon string) string {
	sum := sha256.Sum256([]byte(canon))
	return readable(filepath.Base(canon)) + "-" + hex.EncodeToString(sum[:6])
}

// readable keeps letters, digits, '.', '_' and '-' of a base name (others
// become '_'), drops leading dots (no hidden directories) and cuts it short.
func readable(base string) string {
	var b strings.Builder
	for _, r := range strings.TrimLeft(base, ".") {
		if b.Len() >= keyBase {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "project"
	}
	return b.String()
}

// Rel is where the HOME of name ("run" or an agent) lives, relative to
// stockade's data directory: the project's own, or the shared one.
func Rel(name, key string, shared bool) string {
	if shared {
		return path.Join(SharedDir, name)
	}
	return path.Join(ProjectDir, name, key)
}
