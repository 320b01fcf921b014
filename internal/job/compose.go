package job

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/denial"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/ocihook"
	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
	"github.com/stockade-dev/stockade/internal/slurm"
	"github.com/stockade-dev/stockade/internal/sshagent"
)

// engineLog opens the engine's log for appending; "": none.
func engineLog(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("opening the engine's log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the engine's log: %w", err)
	}
	return f, nil
}

// Services are what serves a sandbox from the host: its cgroup, and in
// network mode "proxy" the egress and auth proxies behind the listeners
// init makes. Compose makes them; Run runs the job's command in a sandbox
// they serve, once or again (a session restarts its command under the same
// services, so that its runtime rules and its cgroup outlive restarts);
// Close ends them.
//
// The foreground `stockade run` and a session's supervisor both compose
// their sandboxes here, and this is the one place that says which service
// acts at which of the Stages: a new service (a container engine's, a
// transparent network capture) joins here once, and both get it.
type Services struct {
	job Job
	// Proxy and Rules are the egress proxy and its rules, nil unless the
	// network mode is "proxy"; Auth is the auth proxy, nil without routes.
	Proxy *egress.Proxy
	Rules *egress.Rules
	Auth  *authproxy.Proxy
	// SSH is the SSH agent filter, nil unless the job asks for it.
	SSH *sshagent.Agent

	socketDirs []sandbox.SocketDir // the services' socket directories, removed at Close

	// With Job.Containers in network mode "proxy": the pods' proxy and
	// its rules, and the registry proxy of the engine's pulls
	// (EngineEgress).
	Pods     *egress.Proxy
	PodRules *egress.Rules
	Registry *egress.Proxy

	// Slurm is the Slurm chaperon, nil without Job.Slurm.
	Slurm *slurm.Chaperon

	engine *engine.Host // with Job.Containers: the engine's host facts
	// store is the project's engine storage, locked while the services
	// live; storeBusy: another session held it, and each run's engine
	// has a tmpfs instead.
	store      *engine.Store
	storeBusy  bool
	foreground bool // Wiring.Foreground
	// denials are the run's denials (Job.Denials), written to the file of
	// the sandbox that runs now; nil without them.
	denials *denial.File
	event   func(source, event string, fields map[string]any)

	cgroup     *cgroup.Pending
	group      *cgroup.Group // made, once Limits has returned
	required   []cgroup.Requirement
	limitsOnce sync.Once
	report     cgroup.Report
	limitsErr  error
	sweep      sync.WaitGroup // SweepCgroups, which Close waits for
	closeOnce  sync.Once
}

// Wiring is what Compose connects the services to.
type Wiring struct {
	// Cgroup is the sandbox's cgroup when the caller began it early
	// (BeginCgroup, as soon as the run's id is known, so that it is made
	// while the rest of the start goes on); nil: Compose begins it with
	// Limits. Compose owns it from then on, even when it fails.
	Cgroup *cgroup.Pending
	Limits cgroup.Limits
	// Required are the limits set on purpose: one that is not enforced
	// stops the run at Stages.Planned, with nothing started.
	Required []cgroup.Requirement
	// Foreground: a foreground run, whose rules cannot change while it
	// runs: a denial suggests the flag of the next run.
	Foreground bool
	// Event hears the proxies' events, each with its audit source
	// (audit.SourceEgress, audit.SourceAuthProxy, audit.SourceSSHAgent);
	// nil drops them.
	Event func(source, event string, fields map[string]any)
}

// groupPrefix begins the name of every run's cgroup; the run's id follows.
const groupPrefix = "stockade-"

// BeginCgroup begins making the cgroup of the run with the given id, and
// then runs then (nil: nothing) in the same goroutine (cgroup.Begin).
func BeginCgroup(id string, l cgroup.Limits, then func()) *cgroup.Pending {
	return cgroup.Begin(groupPrefix+id, l, then)
}

// Compose makes the services of j. On an error nothing of them is left.
func Compose(j Job, w Wiring) (*Services, error) {
	s := &Services{job: j, cgroup: w.Cgroup, required: w.Required, event: w.Event, foreground: w.Foreground}
	fail := func(err error) (*Services, error) {
		s.Close()
		return nil, err
	}
	event := func(source string) func(string, map[string]any) {
		return func(ev string, f map[string]any) {
			if w.Event != nil {
				w.Event(source, ev, f)
			}
		}
	}
	if j.Policy.Network == "proxy" {
		egressEvent := event(audit.SourceEgress)
		if j.Denials {
			f := &denial.File{}
			s.denials = f
			egressEvent = func(ev string, fields map[string]any) {
				if d, ok := denial.FromEvent(time.Now(), ev, fields); ok {
					f.Add(d) // a failed write: the next rewrites the file
				}
				event(audit.SourceEgress)(ev, fields)
			}
		}
		px, rules, err := Egress(j.Policy, j.ID, w.Foreground, egressEvent)
		if err != nil {
			return fail(err)
		}
		s.Proxy, s.Rules = px, rules
		if s.Auth, err = AuthProxy(j, event(audit.SourceAuthProxy)); err != nil {
			return fail(err)
		}
	}
	if j.SSH != nil {
		a, dir, err := serveSSHAgent(*j.SSH, event(audit.SourceSSHAgent))
		if err != nil {
			return fail(err)
		}
		s.SSH = a
		s.socketDirs = append(s.socketDirs, sandbox.SocketDir{Source: dir, Target: sandboxnet.SSHAgentDir, Why: "--ssh: the agent filter's socket"})
	}
	if j.GitHub && s.Auth != nil {
		dir, err := serveGitHub(s.Auth)
		if err != nil {
			return fail(err)
		}
		s.socketDirs = append(s.socketDirs, sandbox.SocketDir{Source: dir, Target: sandboxnet.GitHubDir, Why: "--gh: the auth proxy's socket for gh"})
	}
	if j.Slurm != nil {
		if j.Policy.Network != "proxy" {
			return fail(fmt.Errorf("--slurm needs network mode proxy: the chaperon's listener is made beside the proxies"))
		}
		ch, err := slurm.New(*j.Slurm, event(audit.SourceSlurm))
		if err != nil {
			return fail(err)
		}
		ch.SetRules(s.Rules)
		s.Slurm = ch
	}
	if j.Containers {
		h, err := engine.Check()
		if err != nil {
			return fail(err)
		}
		s.engine = &h
		if j.EngineKey != "" {
			if s.store, s.storeBusy, err = engine.OpenStore(j.EngineData, j.EngineKey); err != nil {
				return fail(err)
			}
		}
		if j.Policy.Network == "proxy" {
			if s.Pods, s.PodRules, s.Registry, err = EngineEgress(j, event); err != nil {
				return fail(err)
			}
		}
	}
	if s.cgroup == nil {
		s.cgroup = BeginCgroup(j.ID, w.Limits, nil)
	}
	return s, nil
}

// Limits waits for the cgroup and checks the limits required of it. The
// first answer stands for every run; the report says what is not enforced.
func (s *Services) Limits() (cgroup.Report, error) {
	s.limitsOnce.Do(func() {
		s.group, s.report, s.limitsErr = s.cgroup.Wait()
		if s.limitsErr != nil {
			s.limitsErr = fmt.Errorf("setting up resource limits: %w", s.limitsErr)
			return
		}
		s.limitsErr = s.report.Refusal(s.required)
	})
	return s.report, s.limitsErr
}

// Run runs the job's command once in a sandbox the services serve and
// returns its exit status (see run). The services act at each stage before
// the caller's hook of that stage does.
func (s *Services) Run(h Hooks) (int, error) {
	caller := h.Stages
	h.Stages.Planned = func() error {
		if _, err := s.Limits(); err != nil {
			return err
		}
		if caller.Planned != nil {
			return caller.Planned()
		}
		return nil
	}
	// Init moves itself into the cgroup's v1 hierarchies (the Placer
	// below); Add puts it in what that could not reach.
	h.Stages.InitStarted = func(pid int) error {
		if err := s.cgroup.Add(pid); err != nil {
			return err
		}
		if caller.InitStarted != nil {
			return caller.InitStarted(pid)
		}
		return nil
	}
	var serve func(Listeners)
	if s.Proxy != nil {
		serve = ServeWith(s.Proxy, s.Auth)
		if s.Slurm != nil {
			proxies := serve
			serve = func(ls Listeners) {
				proxies(ls)
				go s.Slurm.Serve(ls.Slurm)
			}
		}
	}
	// Each run gets an engine of its own, inside its sandbox (package
	// engine); it joins at InitStarted's start (the id maps) and before
	// Wired (the engine's socket listens before the command starts).
	var eng *engine.Engine
	if s.engine != nil {
		log, err := engineLog(s.job.EngineLog)
		if err != nil {
			return sandbox.ExitSetup, err
		}
		if log != nil {
			defer log.Close()
		}
		eng = engine.New(*s.engine, engine.Options{
			Log: log, Workdir: s.job.Policy.Workdir, RequireDigest: s.job.RequireDigest,
			OnRefusal: func(r ocihook.Report) {
				if s.event != nil {
					s.event(audit.SourceEngine, audit.EventContainerRefused, r.Fields())
				}
			},
			OnStranger: func(client string, why error) {
				if s.event != nil {
					s.event(audit.SourceRegistry, egress.EventNetworkDenied, map[string]any{
						"proto": "registry", "client": client, "rule": "registry proxy: the engine's connections only",
						"reason": why.Error(),
					})
				}
			},
		})
		eng.Registries = s.job.Registries
	}
	if s.storeBusy && !s.foreground && h.Warn != nil {
		// A foreground run's start line says so (StoreBusy).
		h.Warn("%s", StoreBusy)
	}
	// Each start's sandbox makes a file of its own (mount.Feed) and sends
	// it: the denials go to the current one, and are kept across starts.
	var feed func(*os.File)
	if s.denials != nil {
		feed = func(f *os.File) {
			s.denials.Use(f) // a failed write: the next rewrites the file
		}
		defer s.denials.Close()
	}
	j := s.job
	j.socketDirs = s.socketDirs
	if s.store != nil {
		j.storePath = s.store.Path
		j.storeID = [2]uint64{s.store.Dev, s.store.Ino}
	}
	var serveEngine func(engine.Listeners)
	if s.Pods != nil {
		serveEngine = ServeEngineWith(s.Pods, s.Registry)
	}
	return run(j, h, s.cgroup, serve, feed, eng, serveEngine)
}

// StoreBusy reports whether another session held the project's engine
// storage when the services were made: each run's engine has a storage of
// its own then.
func (s *Services) StoreBusy() bool { return s.storeBusy }

// Group is the sandbox's cgroup once Limits has returned without an error
// (a session's output relay joins its cpu group), else nil.
func (s *Services) Group() *cgroup.Group {
	if s.limitsErr != nil {
		return nil
	}
	return s.group
}

// SweepCgroups removes the empty cgroups beside this run's that runs now
// gone left behind (a stockade killed with SIGKILL cannot remove its own):
// gone(id, made) says the run with that id, whose group was made then,
// has ended. It works in the
// background; Close waits for it.
func (s *Services) SweepCgroups(gone func(id string, made time.Time) bool) {
	g := s.Group()
	s.sweep.Go(func() {
		g.Sweep(groupPrefix, func(name string, made time.Time) bool {
			return gone(strings.TrimPrefix(name, groupPrefix), made)
		})
	})
}

// CloseProxies stops the proxies: new connections are refused, the auth
// proxy lets its requests finish, and both log what they served; the
// denials file is closed. It may be called more than once.
func (s *Services) CloseProxies() {
	if s.Auth != nil {
		s.Auth.Close()
	}
	for _, p := range []*egress.Proxy{s.Proxy, s.Pods, s.Registry} {
		if p != nil {
			p.Close()
		}
	}
	if s.SSH != nil {
		s.SSH.Close()
	}
	for _, d := range s.socketDirs {
		os.RemoveAll(d.Source)
	}
	// No denial comes after the proxies.
	if s.denials != nil {
		s.denials.Close()
	}
	if s.Slurm != nil {
		s.Slurm.Close()
	}
}

// CloseCgroup removes the cgroup, killing what is left in it, and returns
// once it is gone: with cgroup v1 or v2 that is once the sandbox's init has
// exited, its namespaces torn down, so a run that calls it when the
// command has exited (Stages.CommandExited) has that wait beside its exit
// checks. Close does it too; either may come first, or both at once.
func (s *Services) CloseCgroup() {
	if s.cgroup != nil {
		s.cgroup.Close()
	}
}

// Close stops the proxies and removes the cgroup, killing what is left in
// it. It may be called more than once, and at once from several
// goroutines: every call returns once the services are gone.
func (s *Services) Close() {
	s.closeOnce.Do(func() {
		s.CloseProxies()
		s.CloseCgroup()
		s.sweep.Wait()
		// The engine ended with its sandbox: the storage is free.
		s.store.Close()
	})
}

// StoreBusy says that a run's engine has a storage of its own, because
// another session of the project holds the project's.
const StoreBusy = "--containers: another session of this project holds its container storage; this session's images and build cache last only as long as it does"
