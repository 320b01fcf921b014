package cli

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/console"
	"github.com/stockade-dev/stockade/internal/environ"
	"github.com/stockade-dev/stockade/internal/gitguard"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
	"github.com/stockade-dev/stockade/internal/termfilter"
	"github.com/stockade-dev/stockade/internal/tripwire"
)

type runCmd struct {
	policyFlags
	Detach   bool     `short:"d" help:"Start a session in the background and print its ID."`
	Tripwire bool     `help:"Stop the run if a protected or masked host path changes, and log TAMPER; sessions always restore those paths at the end, a foreground run does with this flag."`
	Command  []string `arg:"" optional:"" passthrough:"partial" help:"${command_help}" placeholder:"-- CMD [ARGS...]"`

	// Set by the agent commands (agent.go), not by flags.
	homeName string                                                   // the sandbox HOME's name (sandboxhome.Rel)
	extraEnv map[string]string                                        // variables the agent profile sets
	prepare  func(*job.Job, policy.Resolved, *sandboxhome.Home) error // the agent's last word on the job
}

func (c *runCmd) Help() string {
	return `Runs CMD in the sandbox, one of three ways:

  on a terminal   a session, attached to this terminal: ctrl-] detaches
                  and the session keeps running ('stockade attach -s ID'
                  comes back); stockade exits with CMD's status when it ends
  with -d         a session in the background: prints its ID and exits 0;
                  'stockade list', 'attach', 'logs -s ID' and 'stop' follow it
  otherwise       (a script, a pipe) in the foreground: stdin, stdout and
                  stderr pass through, signals are forwarded

stockade exits with CMD's status (128+N when it was killed by signal N),
2 for a usage error, 125 when the sandbox could not be set up, 126 when CMD
could not be executed, 127 when it was not found.

Inside: the workdir read-write, a persistent sandbox HOME of the project's
own (--shared-home: one for every project), a fresh /tmp, the system
directories read-only, no capabilities. The network (--network proxy, the
default) is loopback plus stockade's HTTP proxy (127.0.0.1:3128), SOCKS5
proxy (127.0.0.1:1080) and DNS stub, which let out only what --agent-allow
names (--agent-policy deny, the default); --network none leaves loopback
only.

Examples:
  stockade run --memory 4g -- make test
  stockade run --agent-allow example.com -- curl -sI https://example.com
  stockade run -d -- sh -c 'make all > build.log'`
}

// newID makes a session ID from the kernel's CSPRNG. It calls getrandom(2)
// itself, which is where crypto/rand reads too: nothing else in a run uses
// crypto/rand, and its first call costs 20 to 30 µs more at every start.
func newID() (string, error) {
	b := make([]byte, 3)
	if n, err := unix.Getrandom(b, 0); err != nil || n != len(b) {
		if err == nil {
			err = fmt.Errorf("getrandom returned %d of %d bytes", n, len(b))
		}
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
	// What every sandbox shares (the seccomp filter, the signal
	// forwarding, whose registration is a round trip per signal to the
	// runtime's signal thread) is worked out while the policy resolves.
	sandbox.Warm()
	session := c.Detach || term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
	// In the foreground the cgroup is made as soon as the run has its id,
	// while the rest of the start goes on; Ready checks it before init
	// starts. (A session's supervisor makes its own.)
	var cg *cgroup.Pending
	defer func() {
		if cg != nil {
			cg.Close()
		}
	}()
	j, r, home, err := c.job(func(id string, r policy.Resolved) {
		if !session {
			cg = cgroup.Begin("stockade-"+id, limitsOf(r))
		}
	})
	if err != nil {
		return err
	}
	log := newLogger(j.Policy.LogLevel)
	if session {
		return c.session(j, r, home, log)
	}
	var serve func(job.Listeners)
	if j.Policy.Network == "proxy" {
		note := func(event string, f map[string]any) {
			if event != "connection" && event != "auth_request" {
				log.info("%s: %v", event, f)
			}
		}
		px, _, err := job.Egress(j.Policy, j.ID, note)
		if err != nil {
			return err
		}
		defer px.Close()
		auth, err := job.AuthProxy(j, note)
		if err != nil {
			return err
		}
		if auth != nil {
			defer auth.Close()
		}
		serve = job.ServeWith(px, auth)
	}
	ready := func() error {
		_, report, err := cg.Wait()
		if err != nil {
			return fmt.Errorf("setting up resource limits: %w", err)
		}
		if err := report.Refusal(requirements(r)); err != nil {
			return err
		}
		printStatus(log, j.ID, enforcementOf(r, home, report))
		return nil
	}
	var wrap func(io.Writer) io.Writer // the command's output to the user's terminal
	if j.Policy.Terminal != policy.TerminalRaw {
		wrap = func(w io.Writer) io.Writer { return termfilter.NewWriter(w, nil) }
	}
	con, err := console.Open(os.Stdin, os.Stdout, os.Stderr, wrap)
	if err != nil {
		return fmt.Errorf("setting up the terminal: %w", err)
	}
	defer con.Close()
	code, err := job.Run(j, job.Hooks{
		Stdin: con.Stdin, Stdout: con.Stdout, Stderr: con.Stderr,
		TTY: con.TTY, OnPTY: con.Attach, Ready: ready, OnStart: cg.Add, Placer: cg, OnStarted: con.Started,
		Gone: func() { go cg.Close() }, // beside the checks; the deferred Close waits for it
		Warn: log.warn, Debug: log.debugJSON,
		Snapshot: c.Tripwire, Restored: restoredWarning(log), OnTamper: tamperStop(c.Tripwire, log),
		OnFinding: log.finding, Serve: serve, GitChecked: gitReport(log),
	})
	con.Close()
	if err != nil {
		log.error("%v", err)
	}
	return exitError{code}
}

// job resolves the policy and everything else a run needs into a Job;
// onID, when set, hears the run's id as soon as it is made.
func (c *runCmd) job(onID func(id string, r policy.Resolved)) (job.Job, policy.Resolved, string, error) {
	argv := c.Command
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return job.Job{}, policy.Resolved{}, "", usageError{errors.New("no command given; usage: stockade run [flags] -- CMD [ARGS...]")}
	}
	r, home, err := c.resolve()
	if err != nil {
		return job.Job{}, r, "", err
	}
	if err := checkLimits(r); err != nil {
		return job.Job{}, r, "", err
	}
	if err := landlock.CheckABI(landlock.ABI()); err != nil {
		return job.Job{}, r, "", fmt.Errorf("refusing to start: %w", err)
	}
	if home == "" {
		return job.Job{}, r, "", errors.New("cannot find your home directory; set HOME to an absolute path")
	}
	id, err := newID()
	if err != nil {
		return job.Job{}, r, "", err
	}
	if onID != nil {
		onID(id, r)
	}
	name := c.homeName
	if name == "" {
		name = "run"
	}
	rel, err := homeRel(name, r.Policy)
	if err != nil {
		return job.Job{}, r, "", err
	}
	log := newLogger(r.Policy.LogLevel)
	sandboxHome, err := sandboxhome.Open(stockadeData(home), rel, func(msg string) { log.warn("%s", msg) })
	if err != nil {
		return job.Job{}, r, "", err
	}
	defer sandboxHome.Close()
	extra := map[string]string{
		"HOME": home, "TMPDIR": "/tmp", "STOCKADE_SANDBOX": "1", "STOCKADE_ID": id,
	}
	if r.Policy.Network == "proxy" {
		for k, v := range proxyEnv {
			extra[k] = v
		}
	}
	for k, v := range c.extraEnv {
		extra[k] = v
	}
	env, _ := environ.Build(os.Environ(), r.Policy.Env, extra)
	j := job.Job{
		ID: id, Policy: r.Policy, MaxProcs: pidsOf(r).rlimit,
		Home: home, HomeSource: sandboxHome.Path, Records: job.RecordsDir(stateHome(home)),
		Argv: argv, Env: env,
	}
	if c.prepare != nil {
		if err := c.prepare(&j, r, sandboxHome); err != nil {
			return job.Job{}, r, home, err
		}
	}
	return j, r, home, nil
}

// printStatus prints the start line, then every downgrade and loosening.
// They go out in one write, so that they stay together.
func printStatus(log logger, id string, e enforcement) {
	var b bytes.Buffer
	log.out = &b
	log.status("sandbox %s: %s", id, e.line())
	for _, w := range e.Downgrades {
		log.warn("%s", w)
	}
	for _, w := range e.Loosenings {
		log.loosening("%s", w)
	}
	os.Stderr.Write(b.Bytes())
}

// restoredWarning prints what the tripwire restore put back, loudly.
func restoredWarning(log logger) func([]tripwire.Change, error) {
	return func(changes []tripwire.Change, err error) {
		for _, c := range changes {
			log.warn("TAMPER: %s was %s during the run; restored (%s)", c.Path, c.Kind, c.Detail)
		}
		if err != nil {
			log.warn("tripwire restore incomplete: %v", err)
		}
	}
}

// gitReport prints what gitguard moved aside after the run, one line each,
// whatever the log level: the user's next git command depends on it.
func gitReport(log logger) func([]gitguard.Finding, error) {
	return func(found []gitguard.Finding, err error) {
		for _, f := range found {
			log.printf(3, "", "%s", f)
		}
		if err != nil {
			log.printf(3, "", "NOT CHECKED: the git metadata of the workdir: %v; review .git and nested repositories before you run git there", err)
		}
	}
}

// tamperStop stops a foreground run at the first change to a protected
// path: SIGTERM to the process group of stockade is forwarded into the
// sandbox like a user's ^C.
func tamperStop(on bool, log logger) func(tripwire.Change) {
	if !on {
		return nil
	}
	return func(c tripwire.Change) {
		if c.Kind == tripwire.Blind {
			log.warn("TAMPER: %s; stopping", c)
		} else {
			log.warn("TAMPER: %s %s (%s); stopping", c.Path, c.Kind, c.Detail)
		}
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}

// proxyEnv points the tools in the sandbox at the proxies (both spellings:
// curl and Go read the lower case, others the upper).
var proxyEnv = map[string]string{
	"HTTP_PROXY": "http://127.0.0.1:3128", "HTTPS_PROXY": "http://127.0.0.1:3128",
	"http_proxy": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128",
	"ALL_PROXY": "socks5h://127.0.0.1:1080", "all_proxy": "socks5h://127.0.0.1:1080",
	"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
}
