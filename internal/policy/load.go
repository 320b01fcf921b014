package policy

import (
	"path/filepath"
)

// Paths are the admin and user config files. Tests point them at a temp
// dir; an empty path skips that layer.
type Paths struct {
	Admin, User string
}

// DefaultPaths returns AdminPath and $XDG_CONFIG_HOME/stockade/config.json,
// falling back to ~/.config when XDG_CONFIG_HOME is unset or relative (the
// XDG spec says to ignore a relative one).
func DefaultPaths(getenv func(string) string) Paths {
	dir := getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		dir = ""
		if home := getenv("HOME"); filepath.IsAbs(home) {
			dir = filepath.Join(home, ".config")
		}
	}
	p := Paths{Admin: AdminPath}
	if dir != "" {
		p.User = filepath.Join(dir, "stockade", "config.json")
	}
	return p
}

// Options are the inputs of Load.
type Options struct {
	Paths   Paths
	Environ []string // os.Environ()
	Flags   Flags
	Cwd     string // absolute; the default workdir and base of relative paths
}

// Load reads every layer and resolves them. The workdir is settled first
// (flag, then env, then the user file, then the admin file, then cwd),
// because the project file is read from it. Load does not Validate.
func Load(o Options) (Resolved, error) {
	var layers []Layer
	for _, f := range []struct {
		path string
		kind Kind
	}{{o.Paths.Admin, KindAdmin}, {o.Paths.User, KindUser}} {
		if f.path == "" {
			continue
		}
		l, err := LoadFile(f.path, f.kind)
		if err != nil {
			return Resolved{}, err
		}
		layers = append(layers, l)
	}
	env, err := FromEnv(o.Environ, o.Cwd)
	if err != nil {
		return Resolved{}, err
	}
	flags, err := FromFlags(o.Flags, o.Cwd)
	if err != nil {
		return Resolved{}, FlagError{err}
	}
	layers = append(layers, env, flags)

	workdir := filepath.Clean(o.Cwd)
	for _, l := range layers {
		if l.Workdir != nil {
			workdir = *l.Workdir // layers are in ascending precedence
		}
	}
	project, err := LoadFile(filepath.Join(workdir, ProjectFile), KindProject)
	if err != nil {
		return Resolved{}, err
	}
	return Resolve(o.Cwd, append(layers, project)...)
}

// FlagError is a flag value that does not parse: the command line's
// mistake, which the CLI reports as a usage error rather than a failed
// setup.
type FlagError struct{ error }

func (e FlagError) Unwrap() error { return e.error }
