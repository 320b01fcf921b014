package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/console"
	"github.com/stockade-dev/stockade/internal/environ"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandbox"
)

type runCmd struct {
	policyFlags
	Command []string `arg:"" passthrough:"partial" help:"The command to run, after --." placeholder:"-- CMD [ARGS...]"`
}

func (c *runCmd) Help() string {
	return `Runs CMD in the sandbox in the foreground and exits with its status (128+N
when it was killed by signal N; 125 when the sandbox could not be set up,
126 when CMD could not be executed, 127 when it was not found).

Inside: the workdir read-write, a persistent sandbox HOME, a fresh /tmp,
the system directories read-only, no network but loopback, no capabilities.

Example:
  stockade run --memory 4g -- make test`
}

func newID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a session id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (c *runCmd) Run() error {
	if err := c.run(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return err
		}
		return setupError{err}
	}
	return nil
}

func (c *runCmd) run() error {
	argv := c.Command
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return errors.New("no command given; usage: stockade run [flags] -- CMD [ARGS...]")
	}
	r, home, err := c.resolve()
	if err != nil {
		return err
	}
	p := r.Policy
	if err := landlock.CheckABI(landlock.ABI()); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	if home == "" {
		return errors.New("cannot find your home directory; set HOME to an absolute path")
	}
	id, err := newID()
	if err != nil {
		return err
	}
	homeSource := filepath.Join(dataHome(home), "stockade", "home", "run")
	if err := os.MkdirAll(homeSource, 0o700); err != nil {
		return fmt.Errorf("creating the sandbox HOME %s: %w", homeSource, err)
	}
	env, _ := environ.Build(os.Environ(), p.Env, map[string]string{
		"HOME": home, "TMPDIR": "/tmp", "STOCKADE_SANDBOX": "1", "STOCKADE_ID": id,
	})

	cg, report, err := cgroup.New("stockade-"+id, limitsOf(r))
	if err != nil {
		return fmt.Errorf("setting up resource limits: %w", err)
	}
	defer cg.Close()
	log := newLogger(p.LogLevel)
	e := enforcementOf(r, home, report)
	log.status("sandbox %s: %s", id, e.line())
	for _, w := range e.Downgrades {
		log.warn("%s", w)
	}
	for _, w := range e.Loosenings {
		log.loosening("%s", w)
	}

	con, err := console.Open(os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		return fmt.Errorf("setting up the terminal: %w", err)
	}
	defer con.Close()
	// Placeholders and the plan are made while init is cloned and its
	// runtime starts; init waits for the plan.
	prep := make(chan *prepared, 1)
	go func() { prep <- prepare(r, home, homeSource, id, argv, env, con.TTY, log) }()
	var ready atomic.Pointer[prepared]
	sb, err := sandbox.Start(sandbox.Options{
		Stdin: con.Stdin, Stdout: con.Stdout, Stderr: con.Stderr,
		OnStart: cg.Add,
		OnPTY:   con.Attach,
		OnQuiet: func() { ready.Load().removeSoon() },
	})
	pr := <-prep
	ready.Store(pr)
	defer pr.cleanup()
	if err != nil {
		return err
	}
	con.Started()
	if pr.err != nil {
		sb.Kill()
		return pr.err
	}
	log.debugJSON("mount plan", pr.spec.Plan)
	if err := sb.Send(pr.spec); err != nil {
		sb.Kill()
		return err
	}
	code, err := sb.Wait()
	con.Close()
	if err != nil {
		log.error("%v", err)
	}
	return exitError{code}
}

// prepared is what run makes on the host while init starts: the
// placeholders that protect missing paths, and the plan.
type prepared struct {
	spec         sandbox.Spec
	err          error
	placeholders []mount.Placeholder
	missing      []mount.MissingPath
	forget       func()
	log          logger
	removed      chan error
	once         sync.Once
}

func prepare(r policy.Resolved, home, homeSource, id string, argv, env []string, tty bool, log logger) *prepared {
	p := r.Policy
	pr := &prepared{log: log, forget: func() {}, removed: make(chan error, 1)}
	// Placeholders a killed stockade could not remove are removed now.
	records := filepath.Join(stateHome(home), "stockade", "placeholders")
	if err := mount.Sweep(records); err != nil {
		log.warn("%v", err)
	}
	mcfg := mount.Config{Workdir: p.Workdir, RW: p.RW, Protect: p.Protect}
	if pr.placeholders, pr.err = mount.CreatePlaceholders(mcfg); pr.err != nil {
		return pr
	}
	if pr.forget, pr.err = mount.SaveRecord(records, id, pr.placeholders); pr.err != nil {
		mount.RemovePlaceholders(pr.placeholders)
		pr.placeholders, pr.forget = nil, func() {}
		return pr
	}
	pr.missing = mount.Missing(mcfg)
	pr.spec, pr.err = sandbox.NewSpec(sandbox.Config{
		ID: id, Workdir: p.Workdir, Home: home, HomeSource: homeSource,
		RO: p.RO, RW: p.RW, Protect: p.Protect, Mask: p.Mask, Unmask: p.Unmask,
		Argv: argv, Env: env, TTY: tty, MaxProcs: pidsOf(r).rlimit,
	}, mount.OS{})
	return pr
}

// removeSoon starts removing the placeholders. It is called once no process
// of the sandbox is left (init says so before it exits), or at cleanup.
func (pr *prepared) removeSoon() {
	pr.once.Do(func() {
		go func() { pr.removed <- mount.RemovePlaceholders(pr.placeholders) }()
	})
}

// cleanup removes the placeholders (if that has not started already) and
// warns about protected paths the command created where none could be made.
// It runs only after the sandbox is gone.
func (pr *prepared) cleanup() {
	pr.removeSoon()
	if err := <-pr.removed; err != nil {
		pr.log.warn("%v", err)
	}
	pr.forget()
	for _, m := range pr.missing {
		if exists(m.Path) {
			pr.log.warn("the command created %s, which stockade protects when it exists: review it before an IDE, git or an agent outside the sandbox uses it", m.Path)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
