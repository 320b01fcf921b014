package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

// hookCmd holds the OCI hooks the container engine of a session runs
// (see internal/ocihook); hidden from the help, as no one types them.
type hookCmd struct {
	Precreate     hookPrecreateCmd     `cmd:"" help:"Rewrite a container's OCI config: config on stdin, config to use on stdout."`
	Createruntime hookCreateRuntimeCmd `cmd:"" name:"createruntime" help:"Validate a container's OCI config: OCI state on stdin; refuses with one line on stderr."`
}

type hookFacts struct {
	Facts  string `name:"facts" required:"" type:"existingfile" placeholder:"FILE" help:"The session's facts (JSON, written by the supervisor)."`
	Events string `name:"events" placeholder:"SOCKET" help:"Report a refusal to the session on this unix socket."`
}

// maxHookInput bounds what a hook reads from the engine.
const maxHookInput = 16 << 20

func (h hookFacts) load() (ocihook.Facts, error) {
	var f ocihook.Facts
	b, err := os.ReadFile(h.Facts)
	if err != nil {
		return f, fmt.Errorf("reading the session's facts: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("reading the session's facts %s: %w", h.Facts, err)
	}
	return f, nil
}

type hookPrecreateCmd struct{ hookFacts }

func (c *hookPrecreateCmd) Run() error { return c.run(os.Stdin, os.Stdout) }

func (c *hookPrecreateCmd) run(in io.Reader, out io.Writer) error {
	f, err := c.load()
	if err != nil {
		return err
	}
	config, err := io.ReadAll(io.LimitReader(in, maxHookInput))
	if err != nil {
		return fmt.Errorf("reading the container's config from stdin: %w", err)
	}
	rewritten, err := ocihook.Precreate(config, f)
	if err != nil {
		return err
	}
	_, err = out.Write(rewritten)
	return err
}

type hookCreateRuntimeCmd struct{ hookFacts }

// Run prints a refusal as it is, one line, and puts it where the engine
// reads the runtime's error from, for the engine to hand to the agent as
// its error; and reports it to the session.
func (c *hookCreateRuntimeCmd) Run() error {
	var st state
	err := c.run(os.Stdin, &st)
	var r *ocihook.Refusal
	if errors.As(err, &r) {
		fmt.Fprintln(os.Stderr, r)
		if st.runtimeLog != "" {
			runtimeError(st.runtimeLog, r.Error())
		}
		if c.Events != "" {
			// Best effort: the refusal stands whether or not the
			// session hears of it.
			ocihook.Send(c.Events, ocihook.Report{Check: r.Check, Field: r.Field, Reason: r.Reason, Container: st.ID, Image: st.image})
		}
		return exitError{1}
	}
	return err
}

// state is the OCI state a hook gets on stdin: the container's id; image
// is filled from the engine's record of the container, and runtimeLog is
// where the engine reads the runtime's error.
type state struct {
	ID         string `json:"id"`
	Pid        int    `json:"pid"`
	image      string
	runtimeLog string
}

func (c *hookCreateRuntimeCmd) run(in io.Reader, st *state) error {
	f, err := c.load()
	if err != nil {
		return err
	}
	if err := json.NewDecoder(io.LimitReader(in, maxHookInput)).Decode(st); err != nil || st.ID == "" {
		return fmt.Errorf("reading the OCI state from stdin: want a JSON object with an id (%v)", err)
	}
	st.runtimeLog = ocihook.RuntimeLog(f, st.ID)
	// The config is the one in the engine's bundle of the container, found
	// by its id: the state's bundle is not always the bundle's path (crun
	// says "/" for a --privileged container).
	bundle := ocihook.Bundle(f, st.ID)
	if bundle == "" {
		return &ocihook.Refusal{Check: "container", Field: "id", Reason: fmt.Sprintf("%q is not a storage id", st.ID)}
	}
	config, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return fmt.Errorf("reading the container's config: %w", err)
	}
	if f.EngineNamespaces == nil {
		// The runtime runs createRuntime hooks in its own namespaces,
		// which are the engine's.
		f.EngineNamespaces = ownNamespaces()
	}
	// The container's root and image come from the engine's record of it,
	// which the agent cannot write, never from the config (see
	// ocihook.LookupContainer).
	if f.Container, err = ocihook.LookupContainer(f, st.ID); err != nil {
		return &ocihook.Refusal{Check: "container", Field: "id", Reason: err.Error()}
	}
	st.image = f.Container.Image
	if err := ocihook.Check(config, f); err != nil {
		return err
	}
	// The runtime has made the binds already: they must be what was
	// checked (a source swapped for a link in between is refused).
	if st.Pid <= 0 {
		return &ocihook.Refusal{Check: "mounts", Field: "pid", Reason: "the OCI state names no process of the container"}
	}
	container, err := containerMountinfo(st.Pid)
	if err != nil {
		return &ocihook.Refusal{Check: "mounts", Field: "pid", Reason: fmt.Sprintf("reading the container's mounts: %v", err)}
	}
	own, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return &ocihook.Refusal{Check: "mounts", Field: "mountinfo", Reason: err.Error()}
	}
	return ocihook.CheckMounted(config, container, own, f)
}

// containerMountinfo reads the mount table of the container's process
// (tests replace it: they have no container).
var containerMountinfo = func(pid int) ([]byte, error) {
	return os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
}

// runtimeError puts msg in place of the runtime's log, for the engine to
// report as the runtime's error: the runtime (crun) reports a failed hook
// by its path and status alone, and drops what the hook wrote. The engine
// (podman) reads the log once the runtime has failed and takes it for the
// error when it holds one JSON object; the runtime holds the log it
// opened, and what it appends goes to the file this one replaces.
func runtimeError(log, msg string) {
	b, err := json.Marshal(map[string]string{"msg": msg, "level": "error"})
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(log), ".stockade-refusal-")
	if err != nil {
		return
	}
	_, err = tmp.Write(append(b, '\n'))
	if tmp.Close() != nil || err != nil || os.Rename(tmp.Name(), log) != nil {
		os.Remove(tmp.Name())
	}
}

// ownNamespaces identifies this process's namespaces by OCI type.
func ownNamespaces() map[string]string {
	ns := make(map[string]string)
	for typ, file := range map[string]string{"pid": "pid", "network": "net", "ipc": "ipc", "uts": "uts", "mount": "mnt", "user": "user", "cgroup": "cgroup"} {
		if id, err := os.Readlink("/proc/self/ns/" + file); err == nil {
			ns[typ] = id
		}
	}
	return ns
}
