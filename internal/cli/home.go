package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
)

// stockadeData is stockade's data directory, which holds the sandbox HOMEs.
func stockadeData(home string) string { return filepath.Join(dataHome(home), "stockade") }

// homeRel is where the sandbox HOME of name (run, or an agent) is for p,
// relative to stockadeData: the project's own, unless shared_home.
func homeRel(name string, p policy.Policy) (string, error) {
	if p.SharedHome {
		return sandboxhome.Rel(name, "", true), nil
	}
	key, err := sandboxhome.Key(p.Workdir)
	if err != nil {
		return "", err
	}
	return sandboxhome.Rel(name, key, false), nil
}

// homeCheck is the doctor's line about the sandbox HOMEs: where they are,
// and where the shared ones of earlier versions went.
func homeCheck(p policy.Policy, home string) check {
	data := stockadeData(home)
	rel, err := homeRel("run", p)
	if err != nil {
		return check{name: "sandbox HOME", detail: err.Error(), fix: "run stockade in an existing project directory"}
	}
	if p.SharedHome {
		return check{name: "sandbox HOME", ok: true,
			detail: fmt.Sprintf("shared by every project (shared_home): %s for run, %s/<agent> for the agents",
				filepath.Join(data, rel), filepath.Join(data, sandboxhome.SharedDir))}
	}
	detail := fmt.Sprintf("one per project: %s for run in %s, %s/<agent>/%s for the agents",
		filepath.Join(data, rel), p.Workdir, filepath.Join(data, sandboxhome.ProjectDir), filepath.Base(rel))
	if _, err := os.Stat(filepath.Join(data, sandboxhome.SharedDir)); err == nil {
		detail += fmt.Sprintf("; the shared HOMEs in %s are used only with --shared-home, and nothing is copied from them",
			filepath.Join(data, sandboxhome.SharedDir))
	}
	return check{name: "sandbox HOME", ok: true, detail: detail}
}
