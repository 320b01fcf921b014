//go:build linux

package job

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
	"github.com/stockade-dev/stockade/internal/mount"
)

// quarantineSuffix is added to the name of what the exit check moves out
// of host tools' way: .cursor/rules becomes .cursor/rules.stockade-quarantine-<id>.
const quarantineSuffix = ".stockade-quarantine-"

// quarantine renames each path the command created at a protected or
// masked name (mount.Scan.Created) in place, to a name no tool reads,
// through directory descriptors that follow no symlink; nothing is
// deleted. It returns one finding per path.
func quarantine(id string, created []mount.Found) []Finding {
	var out []Finding
	for _, f := range created {
		what := "protected"
		if f.Mask {
			what = "masked"
		}
		fd := Finding{Kind: FindingQuarantined, Path: f.Path, Rule: fmt.Sprintf("%s: %s", what, f.Why)}
		rel := strings.TrimPrefix(strings.TrimPrefix(f.Path, f.Root), "/")
		to, err := renameAside(f.Root, rel, id)
		if err != nil {
			fd.Kind = FindingUnhandled
			fd.Detail = fmt.Sprintf("created in the sandbox, and could not be moved aside (%v): review it before a tool on the host reads it", err)
		} else {
			fd.MovedTo = to
			fd.Detail = fmt.Sprintf("created in the sandbox; renamed to %s so that no tool reads it: review it, and rename it back if you trust it", to)
		}
		out = append(out, fd)
	}
	return out
}

// renameAside renames rel below root to a free name with the quarantine
// suffix, never replacing anything, and returns the new host path.
func renameAside(root, rel, id string) (string, error) {
	r, err := beneath.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	for i := 0; ; i++ {
		// A random part the command cannot have guessed, so that it
		// cannot take the name first.
		to := rel + quarantineSuffix + id + "-" + rand.Text()[:8]
		err := r.Rename(rel, to, unix.RENAME_NOREPLACE)
		if err == nil {
			return r.Join(to), nil
		}
		if i >= 3 || !errors.Is(err, unix.EEXIST) {
			return "", err
		}
	}
}
