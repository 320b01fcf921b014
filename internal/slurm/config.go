package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// Scopes: whose jobs the queries and controls of a session reach. Only
// jobs submitted through stockade's chaperon are ever in scope.
const (
	ScopeSession = "session" // this session's (the default)
	ScopeProject = "project" // every session's of this project (workdir)
	ScopeUser    = "user"    // every session's of this user
)

// Scopes lists the scopes in the order --slurm-scope names them.
var Scopes = []string{ScopeSession, ScopeProject, ScopeUser}

// Admin is the administrator's widening of the allowlist, read only from
// the admin config file (policy.AdminPath), key "slurm": a user's or a
// project's file cannot widen it. A flag that Flags refuses with a
// reason of its own (--uid, --prolog, …) stays refused.
type Admin struct {
	// AllowFlags are long option names (without --) that submissions may
	// use besides the default list: one of the table's admin-only ones
	// (account), or one the table does not know, passed on with its value.
	AllowFlags []string `json:"allow_flags,omitempty"`
	// AllowExport are the variable names --export=NAME=VALUE may set in
	// the job's sandbox.
	AllowExport []string `json:"allow_export,omitempty"`
}

// LoadAdmin reads the "slurm" key of the admin config file at path; a
// missing file or key is an empty Admin.
func LoadAdmin(path string) (Admin, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Admin{}, nil
	}
	if err != nil {
		return Admin{}, fmt.Errorf("reading the Slurm allowlist: %w", err)
	}
	var file struct {
		Slurm *json.RawMessage `json:"slurm"`
	}
	if err := json.Unmarshal(data, &file); err != nil || file.Slurm == nil {
		return Admin{}, nil // the policy loader reports a broken file
	}
	return ParseAdmin(*file.Slurm, path)
}

// ParseAdmin parses the value of the "slurm" key of the admin file.
func ParseAdmin(raw []byte, path string) (Admin, error) {
	var a Admin
	dec := json.NewDecoder(bytesReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Admin{}, fmt.Errorf(`%s: key "slurm" must be {"allow_flags": ["account"], "allow_export": ["NAME"]}: %v`, path, err)
	}
	known := slices.Concat(sbatchFlags(), srunFlags())
	for _, f := range a.AllowFlags {
		if k := slices.IndexFunc(known, func(x Flag) bool { return x.Long == f }); k >= 0 && known[k].Refused != "" && !adminOnly(known[k]) {
			return Admin{}, fmt.Errorf("%s: slurm.allow_flags: --%s %s, and stockade never passes it on; remove it", path, f, known[k].Refused)
		}
		if f == "" || f[0] == '-' {
			return Admin{}, fmt.Errorf("%s: slurm.allow_flags: %q: write the long name without dashes, e.g. \"reservation\"", path, f)
		}
	}
	return a, nil
}

// adminOnly reports whether a refused flag is one the administrator may
// allow (its refusal says so).
func adminOnly(f Flag) bool { return f.Long == "account" }

// Config is what a session's chaperon works with; it travels to the
// supervisor in the Job.
type Config struct {
	Session string `json:"session"`
	Workdir string `json:"workdir"`
	Scope   string `json:"scope"`
	// Stockade is the stockade binary as the compute nodes run it.
	Stockade string `json:"stockade"`
	// RunArgs are `stockade run`'s flags that give a job the session's
	// policy (workdir, mounts, masks, protected paths, egress, limits).
	RunArgs []string `json:"run_args"`
	// Network are the egress flags (NetworkArgs) of the session's rules at
	// its start; SetRules replaces them with the rules of the moment.
	Network []string `json:"network"`
	// State is the chaperon's directory, outside every sandbox: the
	// registry of submitted jobs and each job's scripts.
	State string `json:"state"`
	// Env is the environment of the real Slurm commands.
	Env []string `json:"env"`
	// Writable are the trees the session's sandbox can write (the
	// project, --rw trees, the sandbox HOME), canonical: no real Slurm
	// command is run from them (lookPath).
	Writable []string `json:"writable,omitempty"`
	Admin    Admin    `json:"admin"`
	// Step, when set, is the id of the job this sandbox runs in, on a
	// compute node: the chaperon is in step mode, and answers only srun,
	// with the step allowlist, as a step of this job (step.go).
	Step string `json:"step,omitempty"`
}

// table returns the flags of a submission command with the
// administrator's additions.
func (c Config) table(base []Flag) []Flag {
	t := slices.Clone(base)
	for _, name := range c.Admin.AllowFlags {
		k := slices.IndexFunc(t, func(f Flag) bool { return f.Long == name })
		switch {
		case k < 0:
			t = append(t, Flag{Long: name})
		case adminOnly(t[k]):
			t[k].Refused = ""
		}
	}
	return t
}
