package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/console"
	"github.com/stockade-dev/stockade/internal/environ"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/sandbox"
)

type runCmd struct {
	policyFlags
	Command []string `arg:"" passthrough:"" help:"The command to run, after --." placeholder:"-- CMD [ARGS...]"`
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

	cg, report, err := cgroup.New("stockade-"+id, limitsOf(p))
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

	mcfg := mount.Config{Workdir: p.Workdir, RW: p.RW, Protect: p.Protect}
	placeholders, err := mount.CreatePlaceholders(mcfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := mount.RemovePlaceholders(placeholders); err != nil {
			log.warn("%v", err)
		}
	}()
	missing := mount.Missing(mcfg)
	defer func() {
		for _, m := range missing {
			if exists(m.Path) {
				log.warn("the command created %s, which stockade protects when it exists: review it before an IDE, git or an agent outside the sandbox uses it", m.Path)
			}
		}
	}()

	con, err := console.Open(os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		return fmt.Errorf("setting up the terminal: %w", err)
	}
	spec, err := sandbox.NewSpec(sandbox.Config{
		ID: id, Workdir: p.Workdir, Home: home, HomeSource: homeSource,
		RO: p.RO, RW: p.RW, Protect: p.Protect, Mask: p.Mask, Unmask: p.Unmask,
		Argv: argv, Env: env, TTY: con.TTY,
	}, mount.OS{})
	if err != nil {
		con.Close()
		return err
	}
	log.debugJSON("mount plan", spec.Plan)
	code, err := sandbox.Run(spec, sandbox.Options{
		Stdin: con.Stdin, Stdout: con.Stdout, Stderr: con.Stderr,
		OnStart: func(pid int) error {
			con.Started()
			return cg.Add(pid)
		},
	})
	con.Close()
	if err != nil {
		log.error("%v", err)
	}
	return exitError{code}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
