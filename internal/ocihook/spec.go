// Package ocihook holds the policy stockade applies to every container the
// engine inside a sandbox starts, as two OCI hooks run by the stockade binary:
//
//   - Precreate rewrites the proposed runtime configuration (the engine's
//     precreate hook contract: the config on stdin, the config to use on
//     stdout), narrowing the engine's own defaults: the sandbox user,
//     no_new_privileges, a user namespace of the container's own, the
//     workload seccomp profile, hidepid=2 on /proc, the masked and
//     read-only /proc and /sys paths, a core limit of 0, and the entrypoint
//     run under `stockade seal` (the binary mounted read-only at SealPath)
//     with a Landlock policy derived from the container's mounts. What the
//     agent asked for beyond the policy it leaves for Check to refuse.
//   - Check validates the configuration the runtime is about to use (the
//     createRuntime hook) and refuses it on the first check that fails, in
//     one line naming the check and the field. It does not trust Precreate to
//     have run: an engine under the agent's control may skip or undo it.
//     What the config cannot tell (the container's own layer, the image it
//     was made from) comes from the engine's records (LookupContainer).
//
// What no hook sees, a process `podman exec` starts and a build's RUN step,
// passes through stockade as the engine's runtime (RuntimeCall, Exec,
// CheckBuild).
//
// Spec models only the fields the hooks read; Precreate edits the JSON in
// place, so fields it does not know pass through unchanged. Precreate is
// pure; Check reads the filesystem where the runtime will (mount sources,
// whose symbolic links the kernel follows too, and the engine's mount
// table), and LookupContainer the engine's storage.
package ocihook

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// AskedDevices is the annotation in which precreate keeps the devices a
// config asked for beyond DefaultDevices, for the createRuntime check to
// refuse: the runtime makes a container's devices before it runs that
// hook, and would fail on them first with an error that names no policy.
const AskedDevices = "io.stockade.asked-devices"

// SealPath is where the stockade binary is mounted, read-only, in every
// container; the entrypoint runs as `SealPath seal --keep-caps --policy ...`.
const SealPath = "/.stockade/stockade"

// Facts are what a session knows that the hooks check the config against:
// the facts file the supervisor writes, where the engine cannot write, and
// Container, which the createRuntime hook reads from the engine's storage.
type Facts struct {
	// Workdir and Volumes (named volume directories) are where a
	// container may bind a directory from, besides its own files in the
	// engine's storage (see Container).
	Workdir string   `json:"workdir"`
	Volumes []string `json:"volumes"`
	// Storage is the engine's image and container store (graphroot), RunRoot
	// its run root, Driver its storage driver ("vfs"): a container's own
	// files are <Storage or RunRoot>/<Driver>-containers/<id>/userdata, its
	// root its own layer's directory under Storage.
	Storage string `json:"storage"`
	RunRoot string `json:"run_root"`
	Driver  string `json:"driver"`
	// Tmp is the engine's TMPDIR, below which a build's context and
	// buildah's run and cache directories are (CheckBuildMounts).
	Tmp string `json:"tmp"`
	// Seccomp is the canonical workload profile, as OCI linux.seccomp JSON.
	Seccomp json.RawMessage `json:"seccomp"`
	// UID and GID are the sandbox user every container process runs as,
	// in the engine's ids.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	// UIDs and GIDs are the engine's ids, one range per line of its own
	// maps: a container's own user namespace maps each onto itself (the
	// kernel takes a line of a map only when it falls within one line of
	// the parent's).
	UIDs []IDRange `json:"uids"`
	GIDs []IDRange `json:"gids"`
	// SealSource is the stockade binary's path in the engine's view, bound
	// read-only at SealPath.
	SealSource string `json:"seal_source"`
	// Runtime is the real OCI runtime (crun), which stockade runs as the
	// engine's runtime in front of it (RuntimeCall).
	Runtime string `json:"runtime"`
	// RequireDigest refuses a container made from an image named by tag:
	// only name@sha256:... runs.
	RequireDigest bool `json:"require_digest"`
	// Container is what the engine's storage says of the container the
	// config is for (LookupContainer); nil refuses it.
	Container *Container `json:"-"`
	// EngineNamespaces identifies the engine's own namespaces by type
	// ("network" -> "net:[4026532011]"), and NamespaceOf tells what a
	// namespace path in the config names (by default the inode of the
	// file it leads to, links followed, as the runtime opens it): a
	// container joining one of the engine's is refused.
	EngineNamespaces map[string]string            `json:"engine_namespaces"`
	NamespaceOf      func(string) (string, error) `json:"-"`
	// MountPoints lists the mount points of the engine's mount table (by
	// default this process's, which the createRuntime hook shares with
	// the runtime): a volume with a mount at or below it is refused.
	MountPoints func() ([]string, error) `json:"-"`
}

// IDRange is Count ids from Start.
type IDRange struct {
	Start uint32 `json:"start"`
	Count uint32 `json:"count"`
}

// Spec is the part of an OCI runtime configuration (config.json) the hooks
// read.
type Spec struct {
	Process *Process `json:"process"`
	Root    *Root    `json:"root"`
	Mounts  []Mount  `json:"mounts"`
	// Annotations are the agent's to set (--annotation): only
	// AskedDevices is read, and it can only refuse.
	Annotations map[string]string `json:"annotations"`
	Linux       *Linux            `json:"linux"`
	Hooks       *Hooks            `json:"hooks"`
}

// Hooks are the OCI hooks the config asks the runtime to run. Only those
// that run inside the container matter to the checks: the others run in
// the runtime's namespaces, which are the engine's.
type Hooks struct {
	// CreateContainer and StartContainer run in the container's
	// namespaces, startContainer just before the entrypoint: programs of
	// the container that do not run under seal.
	CreateContainer []Hook `json:"createContainer"`
	StartContainer  []Hook `json:"startContainer"`
}

// Hook is one hook: the program and its arguments.
type Hook struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
}

// Process is the container's process.
type Process struct {
	User            User          `json:"user"`
	Args            []string      `json:"args"`
	Capabilities    *Capabilities `json:"capabilities"`
	Rlimits         []Rlimit      `json:"rlimits"`
	NoNewPrivileges bool          `json:"noNewPrivileges"`
}

// User is the identity of the process.
type User struct {
	UID            uint32   `json:"uid"`
	GID            uint32   `json:"gid"`
	AdditionalGids []uint32 `json:"additionalGids"`
}

// Capabilities are the capability sets, by name (CAP_CHOWN, ...).
type Capabilities struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Inheritable []string `json:"inheritable"`
	Permitted   []string `json:"permitted"`
	Ambient     []string `json:"ambient"`
}

// Rlimit is one resource limit.
type Rlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

// Root is the container's root filesystem.
type Root struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

// Mount is one mount of the container.
type Mount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options"`
}

// Linux holds the Linux-specific settings.
type Linux struct {
	Namespaces        []Namespace       `json:"namespaces"`
	Devices           []Device          `json:"devices"`
	Resources         *Resources        `json:"resources"`
	Sysctl            map[string]string `json:"sysctl"`
	Seccomp           json.RawMessage   `json:"seccomp"`
	RootfsPropagation string            `json:"rootfsPropagation"`
	MaskedPaths       []string          `json:"maskedPaths"`
	ReadonlyPaths     []string          `json:"readonlyPaths"`
}

// Namespace is a namespace the container gets: new, or joined by Path.
type Namespace struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// Device is a device node created in the container.
type Device struct {
	Path  string `json:"path"`
	Type  string `json:"type"`
	Major int64  `json:"major"`
	Minor int64  `json:"minor"`
}

// Resources holds the device cgroup rules.
type Resources struct {
	Devices []DeviceRule `json:"devices"`
}

// DeviceRule is one device cgroup rule.
type DeviceRule struct {
	Allow  bool   `json:"allow"`
	Type   string `json:"type"`
	Major  *int64 `json:"major"`
	Minor  *int64 `json:"minor"`
	Access string `json:"access"`
}

// Validate reports a fact a hook cannot work without: a relative or empty
// directory, no storage driver, no ids for a container's user namespace, or
// no canonical seccomp profile (precreate would put none in place).
func (f Facts) Validate() error {
	for name, dir := range map[string]string{"workdir": f.Workdir, "storage": f.Storage, "run_root": f.RunRoot, "seal_source": f.SealSource} {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("the session's facts: %s %q is not an absolute path", name, dir)
		}
	}
	for _, v := range f.Volumes {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("the session's facts: volume %q is not an absolute path", v)
		}
	}
	if f.Driver == "" || strings.ContainsAny(f.Driver, "/.") {
		return fmt.Errorf("the session's facts: storage driver %q is not a driver's name", f.Driver)
	}
	if len(f.UIDs) == 0 || len(f.GIDs) == 0 {
		return errors.New("the session's facts: no ids for a container's user namespace")
	}
	var profile map[string]any
	if json.Unmarshal(f.Seccomp, &profile) != nil || profile == nil {
		return errors.New("the session's facts: seccomp is not an OCI seccomp profile (a JSON object)")
	}
	return nil
}
