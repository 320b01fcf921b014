// Package seal confines one command and executes it in place: the engine of
// `stockade seal`, which container entrypoints run under and which also
// works alone, inside any container or namespace sandbox a user already has.
//
// The policy is JSON in the format of SafeClaw's sandbox helper, so seal can
// stand in for it:
//
//	{
//	  "filesystem": {
//	    "allow": [{"path": "/work", "access": "readwrite"},
//	              {"path": "/usr", "access": "execute"}],
//	    "deny": ["/work/.env"]
//	  },
//	  "syscalls": {"allow": ["read", "write", "execve", "exit_group"], "defaultDeny": true}
//	}
//
// Run applies it in this order, each step with its own exit status, and
// then executes the command, which inherits all of it:
//
//	76 refuse to run set-user-ID or set-group-ID (real and effective ids differ)
//	70 read and check the policy (given, from a file, or from descriptor 3);
//	   75 if the file is writable by others than its owner
//	74 find the command
//	75 no_new_privs
//	71 Landlock: the filesystem rules
//	75 mark every descriptor above 2 close-on-exec
//	73 empty the capability sets (unless KeepCaps, for a container's
//	   entrypoint, whose OCI config has limited them already)
//	72 seccomp: the system call filter
//	74 execve
//
// # What the policy means
//
// filesystem.allow grants one of the levels of landlock.Levels beneath each
// path (read, write, readwrite, execute); every other path is denied, and a
// path that does not exist is an error, never a rule left out. A deny wins
// over any allow: an allow at or beneath a denied path is dropped, and an
// allow above one is split into rules on the entries that exist beside the
// way down to it, because Landlock can only add rights beneath a directory,
// never take them away. The directories on that way keep no right of their
// own (they cannot be listed and nothing can be created in them), and an
// entry created there later is denied: the split fails closed. Allows and
// denies are compared with their symbolic links resolved, as the kernel
// resolves an allow's path; a bind mount of a denied tree elsewhere is not
// seen.
//
// syscalls.allow with defaultDeny true is an allowlist: any other call kills
// the process with SIGSYS. Without defaultDeny (or without a syscalls
// section) seal installs stockade's default profile instead, the one the
// sandbox uses; listing a call it refuses outright is then an error, since
// the list would not be honoured. A name no architecture has is an error
// naming it (70).
package seal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// Exit statuses of seal's own failures, SafeClaw's helper's numbers.
const (
	ExitPolicy     = 70 // the policy cannot be read or parsed, or names something unknown
	ExitLandlock   = 71 // Landlock could not be set up
	ExitSeccomp    = 72 // the system call filter could not be built or installed
	ExitCaps       = 73 // the capabilities could not be dropped
	ExitExec       = 74 // the command could not be found or executed
	ExitPermission = 75 // no_new_privs, descriptors, or a policy file others can write
	ExitSetuid     = 76 // seal runs set-user-ID or set-group-ID
)

// MaxPolicy is the largest policy seal reads.
const MaxPolicy = 64 << 10

// Policy is a seal policy as parsed.
type Policy struct {
	Filesystem *Filesystem `json:"filesystem"`
	Syscalls   *Syscalls   `json:"syscalls,omitempty"`
}

// Filesystem lists the paths the command may use.
type Filesystem struct {
	Allow []PathAccess `json:"allow"`
	Deny  []DenyPath   `json:"deny"`
}

// PathAccess grants Access (a key of landlock.Levels) beneath Path.
type PathAccess struct {
	Path   string `json:"path"`
	Access string `json:"access"`
}

// DenyPath is a path no allow may reach: a JSON string, or an object with a
// "path" as the allow entries have.
type DenyPath string

// UnmarshalJSON accepts "path" and {"path": "path"}.
func (d *DenyPath) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*d = DenyPath(s)
		return nil
	}
	var o struct {
		Path string `json:"path"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return errors.New(`a filesystem.deny entry is a path or {"path": PATH}`)
	}
	*d = DenyPath(o.Path)
	return nil
}

// Syscalls is the system call policy.
type Syscalls struct {
	Allow       []string `json:"allow"`
	DefaultDeny bool     `json:"defaultDeny"`
}

// Parse reads a policy strictly: unknown fields, trailing data, relative
// paths, unknown access levels and unknown system call names are errors,
// each naming what is wrong.
func Parse(data []byte) (Policy, error) {
	var p Policy
	if len(data) > MaxPolicy {
		return p, fmt.Errorf("the policy is %d bytes; at most %d are read", len(data), MaxPolicy)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("parsing the policy: %w", err)
	}
	if dec.More() {
		return p, errors.New("parsing the policy: data after the JSON object")
	}
	return p, p.validate()
}

func (p Policy) validate() error {
	if p.Filesystem == nil {
		return errors.New(`the policy has no "filesystem" section; give at least {"filesystem": {"allow": [{"path": ..., "access": "read"}]}}`)
	}
	for i, a := range p.Filesystem.Allow {
		if _, ok := landlock.Levels[a.Access]; !ok {
			return fmt.Errorf("filesystem.allow[%d] (%s): access %q is not one of read, write, readwrite, execute", i, a.Path, a.Access)
		}
		if err := checkPath(a.Path); err != nil {
			return fmt.Errorf("filesystem.allow[%d]: %w", i, err)
		}
	}
	for i, d := range p.Filesystem.Deny {
		if err := checkPath(string(d)); err != nil {
			return fmt.Errorf("filesystem.deny[%d]: %w", i, err)
		}
	}
	if p.Syscalls == nil {
		return nil
	}
	arch, err := seccomp.NativeArch()
	if err != nil {
		return err
	}
	if _, err := seccomp.Allowlist(p.Syscalls.Allow, arch); err != nil {
		return fmt.Errorf("syscalls.allow: %w", err)
	}
	if !p.Syscalls.DefaultDeny {
		for _, r := range seccomp.Default().Rules {
			for _, name := range p.Syscalls.Allow {
				if len(r.Args) == 0 && r.Action != seccomp.Allow && slices.Contains(r.Names, name) {
					return fmt.Errorf(`syscalls.allow lists %q, which stockade's default profile refuses (without "defaultDeny": true that profile applies); make the list an allowlist with "defaultDeny": true`, name)
				}
			}
		}
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case !filepath.IsAbs(p):
		return fmt.Errorf("path %q is relative; give it from /", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q holds a NUL byte", p)
	}
	return nil
}

// Filter compiles the system call filter of p for arch: the allowlist with
// defaultDeny, stockade's default profile otherwise.
func (p Policy) Filter(arch seccomp.Arch) ([]seccomp.Instruction, error) {
	prof := seccomp.Default()
	if p.Syscalls != nil && p.Syscalls.DefaultDeny {
		var err error
		if prof, err = seccomp.Allowlist(p.Syscalls.Allow, arch); err != nil {
			return nil, err
		}
	}
	return seccomp.Compile(prof, arch)
}
