package job

import (
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/policy"
)

// splitMissing is mount.Split, except for the built-in protected names that
// an empty placeholder would change the meaning of (a second lefthook config
// that lefthook might pick, an empty rust-toolchain that rustup refuses):
// those get no placeholder and are checked at exit, like the paths below a
// missing directory.
func splitMissing(missing []mount.MissingPath) ([]mount.Placeholder, []mount.MissingPath) {
	var held, exit []mount.MissingPath
	for _, m := range missing {
		if _, no := policy.NoPlaceholder(m.Pattern); no {
			exit = append(exit, m)
		} else {
			held = append(held, m)
		}
	}
	planned, without := mount.Split(held)
	return planned, append(without, exit...)
}
