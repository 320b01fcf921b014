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
	Facts string `name:"facts" required:"" type:"existingfile" placeholder:"FILE" help:"The session's facts (JSON, written by the supervisor)."`
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

// Run prints a refusal as it is, one line, for the engine to hand to
// the agent as its error.
func (c *hookCreateRuntimeCmd) Run() error {
	err := c.run(os.Stdin)
	var r *ocihook.Refusal
	if errors.As(err, &r) {
		fmt.Fprintln(os.Stderr, r)
		return exitError{1}
	}
	return err
}

// state is the OCI state a hook gets on stdin; only the bundle matters.
type state struct {
	Bundle string `json:"bundle"`
}

func (c *hookCreateRuntimeCmd) run(in io.Reader) error {
	f, err := c.load()
	if err != nil {
		return err
	}
	var st state
	if err := json.NewDecoder(io.LimitReader(in, maxHookInput)).Decode(&st); err != nil || st.Bundle == "" {
		return fmt.Errorf("reading the OCI state from stdin: want a JSON object with a bundle (%v)", err)
	}
	config, err := os.ReadFile(filepath.Join(st.Bundle, "config.json"))
	if err != nil {
		return fmt.Errorf("reading the container's config: %w", err)
	}
	if f.EngineNamespaces == nil {
		// The runtime runs createRuntime hooks in its own namespaces,
		// which are the engine's.
		f.EngineNamespaces = ownNamespaces()
	}
	if f.Image == "" {
		var s ocihook.Spec
		json.Unmarshal(config, &s)
		for _, key := range ocihook.ImageAnnotations {
			if img := s.Annotations[key]; img != "" {
				f.Image = img
				break
			}
		}
	}
	return ocihook.Check(config, f)
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
