package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/session"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

// session starts j as a session with a detached supervisor; with -d it
// prints the ID, otherwise it attaches until the user detaches or the
// session ends.
func (c *runCmd) session(j job.Job, r policy.Resolved, home string, log logger) error {
	store := session.NewStore(stateHome(home))
	e := c.enforcement(r, home, cgroup.Probe(limitsOf(r)))
	if j.EngineKey != "" && engine.Busy(j.EngineData, j.EngineKey) {
		// The supervisor takes the lock, and says so again if it
		// finds it taken after all.
		e.Downgrades = append(e.Downgrades, job.StoreBusy)
	}
	printStatus(log, j.ID, e)
	cfg := c.sessionConfig(j, r)
	cfg.Loosened, cfg.Enforcement = e.Loosenings, e.line()
	if c.Containers {
		// The supervisor starts the engine; Launch returns once the
		// command runs.
		c.progress.Step("starting the sandbox and its container engine")
	}
	err := session.Launch(cfg, c.sessionEntry(j, r, home))
	c.progress.Done()
	if err != nil {
		return err
	}
	if c.Detach {
		fmt.Println(j.ID)
		return nil
	}
	return attachTo(store, j.ID)
}

// sessionConfig is what the session's supervisor, or the foreground run's
// record, is given; the enforcement line is the caller's to add.
func (c *runCmd) sessionConfig(j job.Job, r policy.Resolved) session.Config {
	return session.Config{
		Store: session.NewStore(stateHome(j.Home)), ID: j.ID, Job: j, Limits: limitsOf(r), Required: requirements(r),
		Tripwire: c.Tripwire, Agent: c.agent, Command: c.display, Guide: c.guide,
	}
}

// sessionEntry is the first session.json of the run.
func (c *runCmd) sessionEntry(j job.Job, r policy.Resolved, home string) session.Session {
	command := c.display
	if command == nil {
		command = j.Argv
	}
	return session.Session{
		Command: command, Workdir: j.Policy.Workdir, Home: j.HomeSource, Tripwire: c.Tripwire,
		Loosening: append(r.Warnings(home, os.Getuid()), c.loosened...),
	}
}

// attachTo attaches the terminal and turns the outcome into an exit status.
func attachTo(store session.Store, id string) error {
	code, detached, report, err := session.Attach(store, id, os.Stdin, os.Stdout)
	if err != nil {
		return err
	}
	// What the checks after the session found, as a foreground run
	// prints it: the names in it are the command's to choose.
	for _, l := range report {
		fmt.Fprintf(os.Stderr, "stockade: %s\n", termfilter.Visible(l))
	}
	if detached {
		// Attach left the cursor at the start of a clean line.
		fmt.Fprintf(os.Stderr, "stockade: detached from session %s; re-attach with: stockade attach -s %s\n", id, id)
		return nil
	}
	return exitError{code}
}

// sessionFlag is the -s flag of the session commands.
type sessionFlag struct {
	Session string `short:"s" required:"" help:"Session ID, or an unambiguous prefix of one." placeholder:"ID"`
}

func (f sessionFlag) resolve() (session.Store, string, error) {
	home := realHome()
	if home == "" {
		return session.Store{}, "", fmt.Errorf("cannot find your home directory; set HOME to an absolute path")
	}
	store := session.NewStore(stateHome(home))
	id, err := store.Resolve(f.Session)
	return store, id, err
}

type attachCmd struct {
	sessionFlag
}

func (c *attachCmd) Help() string {
	return "Attaches this terminal to a running session. ctrl-] detaches again; the session keeps running."
}

func (c *attachCmd) Run() error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	return attachTo(store, id)
}

type stopCmd struct {
	sessionFlag
	Timeout time.Duration `default:"20s" help:"How long to wait for the session to end."`
}

func (c *stopCmd) Help() string {
	return "Stops a session: SIGTERM to the command, SIGKILL to the whole sandbox after 10 seconds."
}

func (c *stopCmd) Run() error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	sess, err := session.Stop(store, id, c.Timeout, func(msg string) { fmt.Fprintln(os.Stderr, "stockade: "+msg) })
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", id, sess.State)
	return nil
}

type deleteCmd struct {
	sessionFlag
}

func (c *deleteCmd) Help() string {
	return "Removes a stopped session's state. Its audit log is kept until 'stockade prune'."
}

func (c *deleteCmd) Run() error {
	store, id, err := c.resolve()
	if err != nil {
		return err
	}
	return store.Delete(id)
}

type pruneCmd struct{}

func (c *pruneCmd) Help() string {
	return "Removes every session that is not running, and its audit log."
}

func (c *pruneCmd) Run() error {
	home := realHome()
	gone, err := session.NewStore(stateHome(home)).Prune()
	for _, id := range gone {
		fmt.Println("removed", id)
	}
	return err
}
