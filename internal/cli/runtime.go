package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/ocihook"
)

// runtimeMain is stockade as the engine's OCI runtime (engine.RuntimeName
// is its name in the engine's root): it applies the policy to what the
// hooks do not see (ocihook.RuntimeCall) and runs the real runtime, the
// one the session's facts name, in its place. A refusal is one line on
// stderr and in the runtime's log, where the engine reads its error, and
// an event of the session.
func runtimeMain(args []string) int {
	f, err := (hookFacts{Facts: engine.FactsFile}).load()
	if err != nil || f.Runtime == "" || !filepath.IsAbs(f.Runtime) {
		fmt.Fprintf(os.Stderr, "stockade runtime: the session's facts name no runtime (%v)\n", err)
		return 1
	}
	call, err := ocihook.ParseRuntimeCall(args)
	run := args
	if err == nil {
		run, err = applyPolicy(call, f)
	}
	var r *ocihook.Refusal
	switch {
	case errors.As(err, &r):
		fmt.Fprintln(os.Stderr, r)
		if call.Log != "" {
			runtimeError(call.Log, r.Error())
		}
		ocihook.Send(engine.EventsSocket, ocihook.Report{Check: r.Check, Field: r.Field, Reason: r.Reason, Container: lastArg(call.Args)})
		return 1
	case err != nil:
		fmt.Fprintf(os.Stderr, "stockade runtime: %v\n", err)
		return 1
	}
	err = syscall.Exec(f.Runtime, append([]string{filepath.Base(f.Runtime)}, run...), os.Environ())
	fmt.Fprintf(os.Stderr, "stockade runtime: running %s: %v\n", f.Runtime, err)
	return 1
}

// applyPolicy returns the arguments to run the real runtime with.
func applyPolicy(call ocihook.RuntimeCall, f ocihook.Facts) ([]string, error) {
	switch call.Command {
	case "exec":
		return execPolicy(call, f)
	case "create", "run":
		return call.Args, buildPolicy(call, f)
	case "checkpoint", "restore":
		// A restore makes a container from what a checkpoint holds,
		// past the hooks; the API filter refuses both already.
		return nil, &ocihook.Refusal{Check: "checkpoint", Field: call.Command, Reason: "checkpoint and restore are not offered in the engine"}
	}
	return call.Args, nil
}

// execPolicy rewrites the process file of an exec (ocihook.Exec) into a
// new file beside it.
func execPolicy(call ocihook.RuntimeCall, f ocihook.Facts) ([]string, error) {
	e, err := ocihook.ParseExec(call.CommandArgs())
	if err != nil {
		return nil, &ocihook.Refusal{Check: "exec", Field: "arguments", Reason: err.Error()}
	}
	bundle := ocihook.Bundle(f, e.Container)
	if bundle == "" {
		return nil, &ocihook.Refusal{Check: "exec", Field: "container", Reason: fmt.Sprintf("%q is not a container of the engine's", e.Container)}
	}
	container, err := readBounded(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, &ocihook.Refusal{Check: "exec", Field: "container", Reason: err.Error()}
	}
	process, err := readBounded(e.Process)
	if err != nil {
		return nil, err
	}
	out, err := ocihook.Exec(process, container, f)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(e.Process), ".stockade-process-")
	if err != nil {
		return nil, err
	}
	_, err = tmp.Write(out)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	cmd := call.Args[:len(call.Args)-len(call.CommandArgs())]
	return append(append([]string{}, cmd...), e.WithProcess(call.CommandArgs(), tmp.Name())...), nil
}

// buildPolicy refuses, for every container, the annotations the runtime
// acts on (ocihook.CheckRuntimeAnnotations); then checks a container the
// hooks do not see: one whose bundle is not the engine's bundle of a
// container of its own, a build's RUN step, and gives it a network
// namespace of its own if it has none (ocihook.IsolateBuild), and private
// propagation where buildah asks for shared (ocihook.PrivateBuild). The
// engine's own containers are the hooks' to check.
func buildPolicy(call ocihook.RuntimeCall, f ocihook.Facts) error {
	args := call.CommandArgs()
	bundle := "."
	for i, a := range args {
		if (a == "--bundle" || a == "-b") && i+1 < len(args) {
			bundle = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--bundle="); ok {
			bundle = v
		}
	}
	path := filepath.Join(bundle, "config.json")
	config, err := readBounded(path)
	if err != nil {
		return err
	}
	// What the runtime itself reads from the config, before any hook,
	// is checked for every container.
	if err := ocihook.CheckRuntimeAnnotations(config); err != nil {
		return err
	}
	if id := lastArg(args); id != "" && filepath.Clean(bundle) == ocihook.Bundle(f, id) {
		return nil
	}
	config, private, err := ocihook.PrivateBuild(config)
	if err != nil {
		return err
	}
	if err := ocihook.CheckBuild(config); err != nil {
		return err
	}
	// What buildah mounted where the config's binds point is in this
	// process's mountinfo: the runtime runs in buildah's mount namespace.
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	if err := ocihook.CheckBuildMounts(config, mountinfo, f); err != nil {
		return err
	}
	isolated, changed, err := ocihook.IsolateBuild(config)
	if err != nil || !changed && !private {
		return err
	}
	return replaceFile(path, isolated)
}

// replaceFile writes data to path through a new file beside it, renamed
// over path: the runtime reads the whole config or the old one.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".stockade-config-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func readBounded(path string) ([]byte, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	return io.ReadAll(io.LimitReader(fd, maxHookInput))
}

func lastArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[len(args)-1]
}
