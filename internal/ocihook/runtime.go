package ocihook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The OCI hooks see every container podman creates, and nothing else: a
// process `podman exec` starts in a running container, and the containers
// of a build's RUN steps (buildah runs the runtime itself, without hooks),
// never pass through them. So the engine's runtime is stockade too, in
// front of the real one: RuntimeCall reads what the engine asks of the
// runtime, and Exec and CheckBuild apply the policy to what the hooks do not
// see, before the real runtime runs.

// RuntimeCall is one call of the OCI runtime (crun's command line).
type RuntimeCall struct {
	Args    []string // the arguments, without the program's name
	Command string   // "create", "exec", "start", ...
	// Log is the runtime's log file (--log), where the engine reads the
	// runtime's error from: "" when none was given.
	Log string
	cmd int // index of Command in Args
}

// runtimeGlobals are crun's global options that take a value as the next
// argument.
var runtimeGlobals = []string{"--log", "--log-format", "--log-level", "--root", "--cgroup-manager"}

// ParseRuntimeCall finds the command and the log of a runtime call.
func ParseRuntimeCall(args []string) (RuntimeCall, error) {
	c := RuntimeCall{Args: args, cmd: -1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "-"):
			c.Command, c.cmd = a, i
			return c, nil
		case slices.Contains(runtimeGlobals, name) && !hasValue:
			if i+1 >= len(args) {
				return c, fmt.Errorf("runtime option %s has no value", a)
			}
			i++
			value = args[i]
		}
		if name == "--log" {
			c.Log = value
		}
	}
	return c, fmt.Errorf("no command in the runtime's arguments %q", args)
}

// CommandArgs are the arguments after the command.
func (c RuntimeCall) CommandArgs() []string { return c.Args[c.cmd+1:] }

// ExecCall is a parsed `exec`: the process file and the container's id.
type ExecCall struct {
	Process   string // --process FILE
	processAt int    // its index in the command's arguments
	Container string
}

// execValued are the options of crun's exec that take a value.
var execValued = []string{"--pid-file", "--process", "-p", "--console-socket", "--cwd", "--env", "-e",
	"--preserve-fds", "--cgroup", "--exec-fifo", "--user", "-u"}

// execRefused are the options of crun's exec that would give the process
// what its process file does not say, past the checks of Exec.
var execRefused = []string{"--cap", "-c", "--apparmor", "--process-label", "--no-new-privs=false"}

// ParseExec reads the arguments of an exec command. An exec without a
// process file (the command given as arguments) is refused: podman always
// gives one.
func ParseExec(args []string) (ExecCall, error) {
	var e ExecCall
	e.processAt = -1
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		switch {
		case slices.Contains(execRefused, name) || slices.Contains(execRefused, args[i]):
			return e, fmt.Errorf("exec option %s", name)
		case !strings.HasPrefix(args[i], "-"):
			if e.Container != "" || i != len(args)-1 {
				return e, fmt.Errorf("exec with a command in its arguments, not a process file")
			}
			e.Container = args[i]
		case slices.Contains(execValued, name):
			if !hasValue {
				if i+1 >= len(args) {
					return e, fmt.Errorf("exec option %s has no value", name)
				}
				i++
				value = args[i]
			}
			if name == "--process" || name == "-p" {
				e.Process, e.processAt = value, i
			}
		}
	}
	if e.Process == "" || e.Container == "" {
		return e, fmt.Errorf("exec without a process file or a container")
	}
	return e, nil
}

// WithProcess returns the command's arguments with the process file
// replaced by path.
func (e ExecCall) WithProcess(args []string, path string) []string {
	out := slices.Clone(args)
	if name, _, hasValue := strings.Cut(out[e.processAt], "="); hasValue {
		out[e.processAt] = name + "=" + path
	} else {
		out[e.processAt] = path
	}
	return out
}

// Exec applies the policy to the process `podman exec` starts in a
// container whose config is container: capabilities beyond the defaults
// are refused (exec --privileged, exec --cap-add); the sandbox user, no
// new privileges and the entrypoint's seal, with the policy the
// container's mounts give, are put in place. It returns the process to
// run, or a *Refusal.
func Exec(process, container []byte, f Facts) ([]byte, error) {
	var spec Spec
	if err := json.Unmarshal(container, &spec); err != nil {
		return nil, &Refusal{"exec", "config.json", err.Error()}
	}
	if err := checkKeys(process); err != nil {
		return nil, &Refusal{"exec", "process", err.Error()}
	}
	var p map[string]any
	if err := json.Unmarshal(process, &p); err != nil || p == nil {
		return nil, &Refusal{"exec", "process", "not a JSON object"}
	}
	var typed Process
	if err := json.Unmarshal(process, &typed); err != nil {
		return nil, &Refusal{"exec", "process", err.Error()}
	}
	if field, reason := checkCaps(&Spec{Process: &typed}, &f); reason != "" {
		return nil, &Refusal{"capabilities", strings.TrimPrefix(field, "process."), reason}
	}
	user := object(p, "user")
	user["uid"], user["gid"] = f.UID, f.GID
	delete(user, "additionalGids")
	p["noNewPrivileges"] = true
	delete(p, "apparmorProfile")
	delete(p, "selinuxLabel")
	policy, err := json.Marshal(Policy(&spec))
	if err != nil {
		return nil, err
	}
	p["args"] = sealed(stringList(p["args"]), string(policy))
	return json.Marshal(p)
}

// sealed puts args under seal with policy, dropping a seal of its own.
func sealed(args []string, policy string) []string {
	if len(args) >= 2 && args[0] == SealPath && args[1] == "seal" {
		if i := slices.Index(args, "--"); i >= 0 {
			args = args[i+1:]
		}
	}
	return append([]string{SealPath, "seal", "--keep-caps", "--policy", policy, "--"}, args...)
}

// buildChecks are the checks of a build's RUN container (CheckBuild).
var buildChecks = []check{
	{"process", checkProcess},
	{"capabilities", checkBuildCaps},
	{"seccomp", checkSeccompPresent},
	{"devices", checkDevices},
	{"sysctl", checkSysctl},
	{"hooks", checkHooks},
	{"propagation", checkPropagation},
	{"namespaces", checkBuildNetwork},
	{"annotations", checkAnnotations},
}

// checkBuildNetwork refuses a RUN step that joins an existing network
// namespace by path (--network ns:PATH). One with no network namespace at
// all (`podman build --network host`, and every step of a build through
// the Docker API, whatever its networkmode) would run in the engine's, the
// sandbox's, where the command's proxies and the auth proxy listen on
// loopback and the pods' policy is not the one that applies: IsolateBuild
// gives it a new, empty one instead.
//
// It also refuses a step without a PID namespace of its own (`podman
// build --pid host`): the engine's is the sandbox's, where the step, root
// of the engine's user namespace with the engine's capabilities, would
// see and signal the command's processes, and as root the launcher's,
// which serves the engine's API. A step that joins any existing
// namespace by path is refused the same way.
func checkBuildNetwork(s *Spec, _ *Facts) (string, string) {
	if s.Linux == nil {
		return "", ""
	}
	pid := false
	for i, n := range s.Linux.Namespaces {
		if n.Path != "" {
			return fmt.Sprintf("linux.namespaces[%d].path", i), "a build step joins an existing " + n.Type + " namespace (" + n.Path + ")"
		}
		pid = pid || n.Type == "pid"
	}
	if !pid {
		return "linux.namespaces", "a build step in the engine's PID namespace, the sandbox's (--pid host)"
	}
	return "", ""
}

// PrivateBuild returns config, a build step's, with every mount's shared
// propagation made private, and whether it changed anything. buildah
// binds a RUN step's cache mount (RUN --mount=type=cache) shared, which
// the propagation check refuses: private, the step's mounts under it stay
// the step's and the cache works the same. Keys are checked first, as the
// runtime reads them; every other field is kept as it was.
func PrivateBuild(config []byte) ([]byte, bool, error) {
	if err := checkKeys(config); err != nil {
		return nil, false, &Refusal{"config", "config.json", err.Error()}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, false, &Refusal{"config", "config.json", err.Error()}
	}
	raw, ok := m["mounts"]
	if !ok || string(raw) == "null" {
		return config, false, nil
	}
	var mounts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &mounts); err != nil {
		return nil, false, &Refusal{"config", "mounts", err.Error()}
	}
	private := map[string]string{"shared": "private", "rshared": "rprivate"}
	changed := false
	for _, mnt := range mounts {
		raw, ok := mnt["options"]
		if !ok || string(raw) == "null" {
			continue
		}
		var opts []string
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, false, &Refusal{"config", "mounts.options", err.Error()}
		}
		touched := false
		for i, o := range opts {
			if p, ok := private[o]; ok {
				opts[i], touched = p, true
			}
		}
		if !touched {
			continue
		}
		b, err := json.Marshal(opts)
		if err != nil {
			return nil, false, err
		}
		mnt["options"], changed = b, true
	}
	if !changed {
		return config, false, nil
	}
	b, err := json.Marshal(mounts)
	if err != nil {
		return nil, false, err
	}
	m["mounts"] = b
	out, err := json.Marshal(m)
	return out, true, err
}

// IsolateBuild returns config, a build step's, with a new network
// namespace added when it has none, and whether it added one: such a step
// runs with no network (a loopback that is down) rather than in the
// engine's. config has passed CheckBuild; every other field is kept as it
// is.
func IsolateBuild(config []byte) ([]byte, bool, error) {
	var s Spec
	if err := json.Unmarshal(config, &s); err != nil {
		return nil, false, err
	}
	if s.Linux != nil && slices.ContainsFunc(s.Linux.Namespaces, func(n Namespace) bool { return n.Type == "network" }) {
		return config, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, false, err
	}
	var linux map[string]json.RawMessage
	if raw, ok := m["linux"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &linux); err != nil {
			return nil, false, err
		}
	}
	if linux == nil {
		linux = map[string]json.RawMessage{}
	}
	var ns []json.RawMessage
	if raw, ok := linux["namespaces"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &ns); err != nil {
			return nil, false, err
		}
	}
	ns = append(ns, json.RawMessage(`{"type":"network"}`))
	raw, err := json.Marshal(ns)
	if err != nil {
		return nil, false, err
	}
	linux["namespaces"] = raw
	if m["linux"], err = json.Marshal(linux); err != nil {
		return nil, false, err
	}
	out, err := json.Marshal(m)
	return out, true, err
}

// CheckBuild validates the config of a container the engine runs for a
// build's RUN step, which no hook sees: the capabilities, devices and
// sysctls a build may ask for (podman build --cap-add, --device,
// --security-opt seccomp=unconfined) are refused as the hooks refuse them
// for a container. The rest of a build's container is buildah's, in the
// engine's user namespace, under the engine's own seccomp profile and
// no_new_privs.
func CheckBuild(config []byte) error {
	if err := checkKeys(config); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	var s Spec
	if err := json.Unmarshal(config, &s); err != nil {
		return &Refusal{"config", "config.json", err.Error()}
	}
	for _, c := range buildChecks {
		if field, reason := c.run(&s, &Facts{}); reason != "" {
			return &Refusal{c.name, field, reason}
		}
	}
	return nil
}

// checkBuildCaps: buildah gives a RUN step's process its capabilities as
// ambient ones too; none may go beyond the defaults.
func checkBuildCaps(s *Spec, _ *Facts) (string, string) { return capsWithin(s, DefaultCaps) }

// checkSeccompPresent refuses a container without a seccomp profile; a
// build's own profile is buildah's.
func checkSeccompPresent(s *Spec, _ *Facts) (string, string) {
	if len(s.Linux.Seccomp) == 0 || string(s.Linux.Seccomp) == "null" {
		return "linux.seccomp", "no seccomp profile (seccomp=unconfined)"
	}
	return "", ""
}
