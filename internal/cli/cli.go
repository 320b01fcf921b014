// Package cli wires flags, environment and config files to the sandbox: one file
// per subcommand, and nothing here enforces anything itself.
package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/sandbox"
	_ "github.com/stockade-dev/stockade/internal/session" // registers the supervisor entry point
	"github.com/stockade-dev/stockade/internal/termfilter"
)

const description = "Run AI coding agents (or any command) in a kernel-enforced Linux sandbox."

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "dev"

type root struct {
	Run        runCmd        `cmd:"" set:"command_help=The command to run and its arguments, after --." help:"Run a command in the sandbox: attached on a terminal, in the foreground otherwise, or detached with -d."`
	Claude     claudeCmd     `cmd:"" set:"command_help=Arguments for the agent, after -- (e.g. -- --help)." help:"Run Claude Code in a session, keys kept outside the sandbox."`
	Codex      codexCmd      `cmd:"" set:"command_help=Arguments for the agent, after -- (e.g. -- --help)." help:"Run OpenAI Codex CLI in a session."`
	Opencode   opencodeCmd   `cmd:"" set:"command_help=Arguments for the agent, after -- (e.g. -- --help)." help:"Run OpenCode in a session."`
	Gemini     geminiCmd     `cmd:"" set:"command_help=Arguments for the agent, after -- (e.g. -- --help)." help:"Run Gemini CLI in a session."`
	List       listCmd       `cmd:"" help:"List sessions."`
	Attach     attachCmd     `cmd:"" help:"Attach to a running session (ctrl-] detaches)."`
	Stop       stopCmd       `cmd:"" help:"Stop a session."`
	Delete     deleteCmd     `cmd:"" help:"Remove a stopped session's state (its audit log stays)."`
	Logs       logsCmd       `cmd:"" help:"Print or follow a session's audit log, or verify its hash chain."`
	Network    networkCmd    `cmd:"" help:"Change or list a running session's egress rules."`
	Why        whyCmd        `cmd:"" help:"Print what a session's sandbox refused, and the command that allows it."`
	Prune      pruneCmd      `cmd:"" help:"Remove stopped sessions and their audit logs."`
	Doctor     doctorCmd     `cmd:"" help:"Check whether this machine can run the sandbox, and say how to fix what is missing."`
	Policy     policyCmd     `cmd:"" help:"Inspect the effective policy."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script for bash, zsh or fish."`
	Version    versionCmd    `cmd:"" help:"Print the version."`
	Seal       sealCmd       `cmd:"" help:"Confine this process (Landlock, seccomp, no capabilities) and execute a command."`
	Hook       hookCmd       `cmd:"" hidden:"" help:"OCI hooks of the container engine (run by the engine, not by hand)."`
}

// grammar returns the command-line model to parse args with: only the named
// command when args name one, so that kong reflects over one command's flags
// rather than all of them (about half a millisecond at every start, which
// `stockade run` pays on its critical path), else the whole root.
func grammar(args []string) any {
	if len(args) > 1 {
		t := reflect.TypeOf(root{})
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if strings.ToLower(f.Name) == args[1] {
				return reflect.New(reflect.StructOf([]reflect.StructField{f})).Interface()
			}
		}
	}
	return &root{}
}

// fastRun returns the command of `stockade run -- CMD [ARGS...]`, the form
// scripts and wrappers use, without kong: with nothing between run and --
// there is no flag to parse, and building even the run grammar costs kong
// about half a millisecond at every start. Anything else is kong's.
// TestFastRunMatchesKong checks that kong parses these the same.
func fastRun(args []string) (*runCmd, bool) {
	if len(args) < 4 || args[1] != "run" || args[2] != "--" {
		return nil, false
	}
	return &runCmd{Command: slices.Clone(args[2:])}, true
}

// exitError carries an exit status out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a command line that asks for nothing runnable (no
// command, a flag value that does not parse); it exits 2, as kong's own
// parse errors do.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// setupError is a failure of run before the command started; it exits with
// sandbox.ExitSetup so scripts can tell it from the command's own failure.
type setupError struct{ error }

func (e setupError) Unwrap() error { return e.error }

// Run runs the stockade command line and returns the process exit status.
func Run(args []string) int {
	if len(args) > 0 && filepath.Base(args[0]) == engine.RuntimeName {
		return runtimeMain(args[1:])
	}
	if len(args) > 1 {
		if entry, ok := sandbox.Entrypoints[args[1]]; ok {
			return entry()
		}
	}
	if words, ok := completeRequest(args); ok {
		return complete(words)
	}
	if c, ok := fastRun(args); ok {
		return exitCode(c.Run())
	}
	if len(args) < 2 {
		// Bare stockade: the overview a newcomer needs, not one line.
		return usage()
	}
	parser, err := kong.New(grammar(args),
		kong.Name("stockade"),
		kong.Description(description),
		kong.UsageOnError(),
		kong.Exit(func(code int) { panic(exitError{code}) }),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stockade: %s\n", termfilter.Visible(err.Error()))
		return 2
	}
	return run(parser, args[1:])
}

func run(parser *kong.Kong, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(exitError)
			if !ok {
				panic(r)
			}
			code = e.code
		}
	}()
	ctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stockade: %s%s\n", termfilter.Visible(err.Error()), helpHint(err))
		return 2
	}
	return exitCode(ctx.Run())
}

// exitCode reports the error a command returned and turns it into the exit
// status.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(os.Stderr, "stockade: %s\n", termfilter.Visible(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	var se setupError
	if errors.As(err, &se) {
		return sandbox.ExitSetup
	}
	return 1
}

// usage prints the whole command overview to stderr and exits 2: a bare
// stockade is a command line that names nothing to do.
func usage() int {
	parser, err := kong.New(&root{}, kong.Name("stockade"), kong.Description(description),
		kong.Writers(os.Stderr, os.Stderr))
	if err != nil {
		fmt.Fprintf(os.Stderr, "stockade: %s\n", termfilter.Visible(err.Error()))
		return 2
	}
	ctx, err := kong.Trace(parser, nil)
	if err == nil {
		err = ctx.PrintUsage(false)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "stockade: %s\n", termfilter.Visible(err.Error()))
	}
	return 2
}

// helpHint points a parse error at the help of the command it is about.
func helpHint(err error) string {
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil {
		return "; see stockade --help"
	}
	path := "stockade"
	if n := pe.Context.Selected(); n != nil {
		path = n.FullPath()
	}
	return "; see " + path + " --help"
}

type versionCmd struct{}

func (versionCmd) Run() error {
	fmt.Println("stockade", Version)
	return nil
}
