package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/console"
	"github.com/stockade-dev/stockade/internal/denial"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/environ"
	"github.com/stockade-dev/stockade/internal/gitconfig"
	"github.com/stockade-dev/stockade/internal/gitguard"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/progress"
	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/sandboxhome"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
	"github.com/stockade-dev/stockade/internal/session"
	"github.com/stockade-dev/stockade/internal/termfilter"
	"github.com/stockade-dev/stockade/internal/tripwire"
)

type runCmd struct {
	policyFlags
	sshFlags
	ghFlags
	slurmFlags
	Detach   bool `short:"d" help:"Start a session in the background and print its ID."`
	Tripwire bool `help:"Stop the run if a protected or masked host path changes, and log TAMPER; sessions always restore those paths at the end, a foreground run does with this flag."`
	containerFlags
	Command []string `arg:"" optional:"" passthrough:"partial" help:"${command_help}" placeholder:"-- CMD [ARGS...]"`

	// Set by the agent commands (agent.go), not by flags.
	homeName   string                                                   // the sandbox HOME's name (sandboxhome.Rel)
	agent      string                                                   // the agent's name, for the audit log and list
	display    []string                                                 // the command as the user gave it (nil: the argv)
	guide      *session.Guide                                           // the agent's guide, by hash
	loosened   []string                                                 // loosenings the agent's settings add (a plain-http upstream)
	downgraded []string                                                 // what the run gets less of than asked (printed as warnings)
	extraEnv   map[string]string                                        // variables the agent profile sets
	prepare    func(*job.Job, policy.Resolved, *sandboxhome.Home) error // the agent's last word on the job

	// progress is the line that shows the long steps of an agent's or an
	// engine's start on a terminal (nil: none; see startProgress).
	progress *progress.Line
}

func (c *runCmd) Help() string {
	return fmt.Sprintf(`Runs CMD in the sandbox, one of three ways:

  on a terminal   a session, attached to this terminal: ctrl-] detaches
                  and the session keeps running ('stockade attach -s ID'
                  comes back); stockade exits with CMD's status when it ends
  with -d         a session in the background: prints its ID and exits 0;
                  'stockade list', 'attach', 'logs -s ID' and 'stop' follow it
  otherwise       (a script, a pipe) in the foreground: stdin, stdout and
                  stderr pass through (a file or a device through a pipe;
                  a directory is refused), signals are forwarded

stockade exits with CMD's status (128+N when it was killed by signal N),
2 for a usage error, 125 when the sandbox could not be set up, 126 when CMD
could not be executed, 127 when it was not found.

Inside: the workdir read-write, a persistent sandbox HOME of the project's
own (--shared-home: one for every project), a fresh /tmp, the system
directories read-only, no capabilities. The network (--network proxy, the
default) is loopback plus stockade's HTTP proxy (%[1]s), SOCKS5
proxy (%[2]s) and DNS stub, which let out only what --agent-allow
names (--agent-policy deny, the default); a program that ignores the
proxy variables has its TCP connections captured and decided the same
way, and UDP other than DNS refused. --network none leaves loopback only.

Examples:
  stockade run --memory 4g -- make test
  stockade run --agent-allow example.com -- curl -sI https://example.com
  stockade run -d -- sh -c 'make all > build.log'`, sandboxnet.HTTPProxyAddr, sandboxnet.SOCKS5Addr)
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
	asSession := c.Detach || term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
	// In the foreground, what every sandbox shares (the seccomp filter)
	// is worked out while the policy resolves, and the relayed signals
	// are registered in the background once the cgroup (below), which the
	// start needs first, is made (sandbox.WarmFacts). A session's client
	// runs no sandbox: its supervisor, another process, warms its own.
	if !asSession {
		sandbox.WarmFacts()
		// The command gets this stdio: refused before anything is made.
		if err := console.Check(os.Stdin, os.Stdout, os.Stderr); err != nil {
			return err
		}
	}
	// In the foreground the cgroup is begun as soon as the run has its id,
	// while the rest of the start goes on; the services check it before
	// init starts. (A session's supervisor makes its own.)
	var cg *cgroup.Pending
	j, r, home, err := c.job(func(id string, r policy.Resolved) {
		if !asSession {
			cg = job.BeginCgroup(id, limitsOf(r), sandbox.RegisterSignals)
		}
	})
	c.progress.Done()
	if err != nil {
		if cg != nil {
			cg.Close()
		}
		return err
	}
	log := newLogger(j.Policy.LogLevel)
	if asSession {
		return c.session(j, r, home, log)
	}
	// A foreground run is recorded as a session is (session.Record): its
	// entry and audit log are made once the command runs, off the start.
	rec := session.Begin(c.sessionConfig(j, r), c.sessionEntry(j, r, home))
	svc, err := job.Compose(j, job.Wiring{Cgroup: cg, Required: requirements(r), Foreground: true,
		Event: func(source, event string, f map[string]any) {
			rec.Event(source, event, f)
			if event != "connection" && event != "auth_request" {
				log.info("%s: %v", event, f)
			}
		}})
	if err != nil {
		rec.Finish(sandbox.ExitSetup, "failed: "+err.Error())
		return err
	}
	defer svc.Close()
	var wrap func(io.Writer) io.Writer // the command's output to the user's terminal
	if j.Policy.Terminal != policy.TerminalRaw {
		wrap = func(w io.Writer) io.Writer { return termfilter.NewWriter(w, nil) }
	}
	con, err := console.Open(os.Stdin, os.Stdout, os.Stderr, wrap)
	if err != nil {
		rec.Finish(sandbox.ExitSetup, "failed: setting up the terminal: "+err.Error())
		return fmt.Errorf("setting up the terminal: %w", err)
	}
	defer con.Close()
	rep := rec.Report()
	code, err := svc.Run(job.Hooks{
		Stdin: con.Stdin, Stdout: con.Stdout, Stderr: con.Stderr,
		TTY: con.TTY, OnPTY: con.Attach, Progress: c.progress,
		Stages: job.Stages{
			Planned: func() error {
				report, _ := svc.Limits() // checked before this stage
				e := c.enforcement(r, home, report)
				if svc.StoreBusy() {
					e.Downgrades = append(e.Downgrades, job.StoreBusy)
				}
				printStatus(log, j.ID, e)
				rec.Started(e.line(), e.Loosenings)
				return nil
			},
			InitStarted: func(int) error { con.Started(); return nil }, // init holds its stdio
			// The record is made while stockade waits for the command,
			// and the cgroups of runs killed before they could remove
			// their own go.
			CommandStarted: func() {
				rec.Open()
				svc.SweepCgroups(session.NewStore(stateHome(j.Home)).Gone)
			},
			// Nothing inside can act any more: the cgroup goes (once init
			// has torn its namespaces down) beside the checks, and the
			// rest after them; the deferred Close waits for both.
			CommandExited: func() { go svc.CloseCgroup() },
			// The checks report next, on the user's terminal: what the
			// command's output left set there (concealed text, the
			// alternate screen) is undone first.
			SandboxGone: func() {
				go svc.Close()
				con.Settle()
			},
		},
		Warn:  func(f string, a ...any) { log.warn(f, a...); rep.Warn(f, a...) },
		Debug: log.debugJSON, Snapshot: c.Tripwire,
		Restored:   func(ch []tripwire.Change, err error) { restoredWarning(log)(ch, err); rep.Restored(ch, err) },
		OnTamper:   tamperStop(c.Tripwire, log, rep),
		OnFinding:  func(f job.Finding) { log.finding(f); rep.Finding(f) },
		GitChecked: func(found []gitguard.Finding, err error) { gitReport(log)(found, err); rep.GitChecked(found, err) },
	})
	con.Close()
	reason := "exited"
	if err != nil {
		log.error("%v", err)
		reason = "failed: " + err.Error()
	}
	// The proxies finish what they serve, and log it, before the stop
	// event; then every event is written before stockade exits.
	svc.CloseProxies()
	rec.Finish(code, reason)
	return exitError{code}
}

// enforcement is the run's start line, downgrades and loosenings.
func (c *runCmd) enforcement(r policy.Resolved, home string, report cgroup.Report) enforcement {
	e := enforcementOf(r, home, report)
	e.Loosenings = append(e.Loosenings, c.loosened...)
	e.Downgrades = append(e.Downgrades, c.downgraded...)
	return e
}

// storeExposed is the workdir or the --ro or --rw path that holds the
// engine's storage store, or lies in it, or "": the command would see the
// records the hooks trust, and write them in the workdir or a --rw path.
func storeExposed(store string, p policy.Policy) string {
	d, _ := storeExposedBy(store, p)
	return d
}

// storeExposedBy is storeExposed, and whether that path holds store (else
// it is store or lies in it).
func storeExposedBy(store string, p policy.Policy) (string, bool) {
	canon := existingCanon(store)
	for _, d := range append(append([]string{p.Workdir}, p.RW...), p.RO...) {
		c := existingCanon(d)
		if canonWithin(c, canon) {
			return d, false
		}
		if canonWithin(canon, c) {
			return d, true
		}
	}
	return "", false
}

// canonWithin reports whether p is dir or lies in it; both canonical
// (existingCanon).
func canonWithin(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// existingCanon is p with every symlink of its longest existing prefix
// resolved.
func existingCanon(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if c, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{c}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
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
	if err := c.sshFlags.check(); err != nil {
		return job.Job{}, policy.Resolved{}, "", err
	}
	r, home, err := c.resolve()
	if err != nil {
		return job.Job{}, r, "", err
	}
	ssh, sshLoosened, err := c.sshFlags.agent(r.Policy)
	if err != nil {
		return job.Job{}, r, "", err
	}
	gh, err := c.ghFlags.github(r.Policy)
	if err != nil {
		return job.Job{}, r, "", err
	}
	es, err := c.containerFlags.parse(r.Policy)
	if err != nil {
		return job.Job{}, r, "", err
	}
	if err := c.slurmFlags.check(r.Policy.Network); err != nil {
		return job.Job{}, r, "", err
	}
	if err := checkLimits(r); err != nil {
		return job.Job{}, r, "", err
	}
	if err := landlock.CheckABI(landlock.ABI()); err != nil {
		return job.Job{}, r, "", fmt.Errorf("refusing to start: %w", err)
	}
	if c.Containers {
		if _, err := engine.Check(); err != nil {
			return job.Job{}, r, "", fmt.Errorf("refusing to start: %w", err)
		}
	}
	if home == "" {
		return job.Job{}, r, "", errors.New("cannot find your home directory; set HOME to an absolute path")
	}
	if err := c.slurmFlags.checkState(r.Policy, home, c.sandboxHomePath(home, r.Policy)); err != nil {
		return job.Job{}, r, "", err
	}
	id, err := newID()
	if err != nil {
		return job.Job{}, r, "", err
	}
	if onID != nil {
		onID(id, r)
	}
	c.startProgress(r)
	name := c.sandboxHomeName()
	if c.homeName != "" {
		c.progress.Step(fmt.Sprintf("preparing %s's sandbox HOME", name))
	}
	// Stockade's own directories stay out of the view (privateDirs):
	// where the workdir, a --rw or a --ro path holds one, it is masked
	// (made first, so that the command cannot make it and plant a
	// configuration or a project's storage there); a tree in one is
	// refused, before anything is made. The masks are added at the end,
	// for the trees as they end up.
	if _, err := privateExposure(home, r.Policy, c.sandboxHomePath(home, r.Policy)); err != nil {
		return job.Job{}, r, "", err
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
		for k, v := range sandboxnet.ProxyEnv() {
			extra[k] = v
		}
		extra["STOCKADE_DENIALS"] = denial.Path
	}
	for k, v := range c.extraEnv {
		extra[k] = v
	}
	if ssh != nil {
		extra["SSH_AUTH_SOCK"] = sandboxnet.SSHAgentSock
		c.loosened = append(c.loosened, sshLoosened)
	}
	if gh != nil {
		for k, v := range gh.env {
			extra[k] = v
		}
		for _, l := range gh.loosened {
			if !slices.Contains(c.loosened, l) {
				c.loosened = append(c.loosened, l)
			}
		}
	}
	if c.Containers {
		for _, kv := range engine.Env() {
			k, v, _ := strings.Cut(kv, "=")
			extra[k] = v
		}
	}
	env, _ := environ.Build(os.Environ(), r.Policy.Env, extra)
	j := job.Job{
		ID: id, Policy: r.Policy, MaxProcs: pidsOf(r).rlimit,
		Home: home, HomeSource: sandboxHome.Path, Records: job.RecordsDir(stateHome(home)),
		Argv: argv, Env: env, SSH: ssh,
	}
	if gh != nil {
		gh.add(&j)
	}
	if r.Policy.Network == "proxy" {
		j.Denials = true
	}
	if r.Policy.GitConfig {
		if j.GitConfig, _, err = gitconfig.Sanitized(r.Policy.Workdir); err != nil {
			return job.Job{}, r, home, err
		}
		// Only a look: the mount opens the path itself, following no link.
		at := filepath.Join(sandboxHome.Path, ".gitconfig")
		if fi, err := os.Lstat(at); err == nil && fi.IsDir() {
			return job.Job{}, r, home, fmt.Errorf("--gitconfig: %s is a directory, where the copy of your git identity goes; remove it (rm -r %s) or leave out --gitconfig", at, at)
		}
	}
	if c.Containers {
		j.Containers, j.RequireDigest = true, c.RequireDigest
		j.EngineLog = filepath.Join(stateHome(home), "stockade", "engine", id+".log")
		if es.store {
			key, err := sandboxhome.Key(r.Policy.Workdir)
			if err != nil {
				return job.Job{}, r, home, err
			}
			store := filepath.Join(stockadeData(home), engine.StoreDir, key)
			if bound := storeExposed(store, r.Policy); bound != "" {
				c.downgraded = append(c.downgraded, fmt.Sprintf("--containers: the engine's storage %s lies in %s, which the sandbox sees: this session's storage is its own, and ends with it", store, bound))
			} else {
				j.EngineData, j.EngineKey = stockadeData(home), key
			}
		}
	}
	j.Pod, j.Registries = es.pod, es.registries
	c.loosened = append(c.loosened, es.loosened...)
	if c.prepare != nil {
		if err := c.prepare(&j, r, sandboxHome); err != nil {
			return job.Job{}, r, home, err
		}
	}
	if c.Slurm {
		if err := c.slurmJob(&j, r, sandboxHome); err != nil {
			return job.Job{}, r, home, err
		}
	}
	// The trees as they end up: an agent's install adds --ro trees (node
	// under ~/.local), a Slurm job its job directory. They are checked
	// again (what was made since, and what another sandbox of the
	// project changed meanwhile, is looked at too), and what they hold
	// is masked.
	private, err := privateExposure(home, j.Policy, sandboxHome.Path)
	if err != nil {
		return job.Job{}, r, home, err
	}
	for _, pd := range private {
		if err := pd.make(); err != nil {
			return job.Job{}, r, home, fmt.Errorf("making %s, to mask it in %s: %w", pd.dir, pd.shownBy, err)
		}
		j.Policy.Mask = append(slices.Clip(j.Policy.Mask), pd.dir)
	}
	return j, r, home, nil
}

// sandboxHomeName is the name of the run's sandbox HOME: run, or the agent's.
func (c *runCmd) sandboxHomeName() string {
	if c.homeName == "" {
		return "run"
	}
	return c.homeName
}

// sandboxHomePath is where the run's sandbox HOME is on the host, or ""
// when its place cannot be told yet (homeRel fails, and so will the start).
func (c *runCmd) sandboxHomePath(home string, p policy.Policy) string {
	rel, err := homeRel(c.sandboxHomeName(), p)
	if err != nil {
		return ""
	}
	return filepath.Join(stockadeData(home), rel)
}

// startProgress makes the progress line of a start that has long steps:
// an agent's (its sandbox HOME) or one with a container engine. A plain
// run has none, and pays nothing for it.
func (c *runCmd) startProgress(r policy.Resolved) {
	if c.agent != "" || c.Containers {
		c.progress = progress.New(os.Stderr, r.Policy.LogLevel == "error")
	}
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
		for _, l := range session.RestoredLines(changes, err) {
			log.warn("%s", l)
		}
	}
}

// gitReport prints what gitguard moved aside after the run, one line each,
// whatever the log level: the user's next git command depends on it.
func gitReport(log logger) func([]gitguard.Finding, error) {
	return func(found []gitguard.Finding, err error) {
		for _, l := range session.GitLines(found, err) {
			log.printf(3, "", "%s", l)
		}
	}
}

// tamperStop stops a foreground run at the first change to a protected
// path: SIGTERM to the process group of stockade is forwarded into the
// sandbox like a user's ^C.
func tamperStop(on bool, log logger, rep session.Reporter) func(tripwire.Change) {
	if !on {
		return nil
	}
	return func(c tripwire.Change) {
		rep.Tamper(c, "stopping the run")
		if c.Kind == tripwire.Blind {
			log.warn("TAMPER: %s; stopping", c)
		} else {
			log.warn("TAMPER: %s %s (%s); stopping", c.Path, c.Kind, c.Detail)
		}
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}
