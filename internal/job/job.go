// Package job runs one sandboxed command from a resolved policy: it protects
// missing paths with placeholders, plans the filesystem view, starts init,
// hands it the plan and waits. The foreground `stockade run` and a session's
// detached supervisor both run their commands through it, composed with the
// same services (Services: the cgroup and the proxies), and hear the same
// lifecycle (Stages); a Job is plain data so that a launcher can pass it to
// a supervisor process.
package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/denial"
	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/gitguard"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/progress"
	"github.com/stockade-dev/stockade/internal/review"
	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/slurm"
	"github.com/stockade-dev/stockade/internal/tripwire"
)

// Job is one command to run in a sandbox, with everything resolved.
type Job struct {
	ID         string        `json:"id"`
	Policy     policy.Policy `json:"policy"`
	MaxProcs   int64         `json:"max_procs,omitempty"` // RLIMIT_NPROC, see sandbox.ExecSpec
	Home       string        `json:"home"`                // $HOME inside (the user's path)
	HomeSource string        `json:"home_source"`         // the persistent sandbox HOME
	Records    string        `json:"records"`             // where placeholder records live
	Argv       []string      `json:"argv"`
	Env        []string      `json:"env"`
	// Auth are the auth proxy's routes with the real keys: they reach only
	// the supervisor (this struct travels to it over a private pipe) and
	// never the sandbox. AllowHTTP names routes whose upstream may be http.
	Auth      map[string]AuthRoute `json:"auth,omitempty"`
	AllowHTTP []string             `json:"allow_http,omitempty"`
	// HomeProtect are files under the sandbox HOME kept read-only inside
	// (the agent's guide: the agent must not rewrite its own instructions).
	HomeProtect []string `json:"home_protect,omitempty"`
	// Containers gives the sandbox a container engine (package engine),
	// whose output goes to EngineLog. RequireDigest refuses a container
	// whose image is not named by digest.
	Containers    bool   `json:"containers,omitempty"`
	EngineLog     string `json:"engine_log,omitempty"`
	RequireDigest bool   `json:"require_digest,omitempty"`
	// EngineData and EngineKey name the project's engine storage,
	// EngineData/engine.StoreDir/EngineKey (engine.OpenStore), kept
	// between sessions; "": a tmpfs for each run (--containers-storage
	// session). A storage another session holds is one for this run alone.
	EngineData string `json:"engine_data,omitempty"`
	EngineKey  string `json:"engine_key,omitempty"`
	// SSH, when set, gives the sandbox an SSH agent: a filter (package
	// sshagent) in front of the user's own, which Services serves.
	SSH *SSHAgent `json:"ssh,omitempty"`

	// GitHub serves the auth proxy's github route also on the unix socket
	// the gh CLI is told to use (--gh).
	GitHub bool `json:"github,omitempty"`

	socketDirs []sandbox.SocketDir // the services' socket directories, once Services made them
	storePath  string              // the engine's storage (Plan.Store), once Services locked it
	storeID    [2]uint64           // its device and inode (Plan.StoreDev, StoreIno)
	// Denials gives the sandbox the file of its denials, read-only at
	// denial.Path (in network mode proxy; package denial): init makes it
	// inside, and Services writes it through the descriptor init sends.
	Denials bool `json:"denials,omitempty"`
	// GitConfig is the user's git identity, sanitized (--gitconfig;
	// package gitconfig), put read-only at .gitconfig in the sandbox
	// HOME. "": none.
	GitConfig string `json:"gitconfig,omitempty"`
	// Slurm gives the sandbox the Slurm chaperon (package slurm), served
	// by the supervisor on sandboxnet.SlurmAddr; nil: none.
	Slurm *slurm.Config `json:"slurm,omitempty"`
	// Pod is the egress policy of the engine's containers (PodRules).
	Pod PodPolicy `json:"pod,omitempty"`
	// Registries are the registries the engine may pull from
	// (--registry-allow): the registry proxy lets out these only.
	Registries []engine.Registry `json:"registries,omitempty"`
}

// PodPolicy is what --pod-policy, --pod-allow and --pod-block say of the
// containers' egress (PodRules).
type PodPolicy struct {
	Policy string        `json:"policy,omitempty"` // "": the agent's
	Allow  []egress.Rule `json:"allow,omitempty"`
	Block  []egress.Rule `json:"block,omitempty"`
}

// AuthRoute is one route of the auth proxy.
type AuthRoute struct {
	Upstream string          `json:"upstream"`
	Key      string          `json:"key"`
	Style    authproxy.Style `json:"style"`
}

// Hooks connect one run to its terminal and its log. The services around
// the sandbox (cgroup, proxies) are not here: Services.Run adds them.
type Hooks struct {
	Stdin, Stdout, Stderr *os.File
	TTY                   bool                        // the command gets a pty opened inside
	OnPTY                 func(master *os.File) error // receives its master
	// Stages hear the run's lifecycle, in order (see Stages).
	Stages Stages
	// Progress, when set, shows the long steps of the start on the
	// user's terminal (the container engine's).
	Progress *progress.Line
	Warn     func(format string, args ...any)
	Debug    func(what string, v any)
	// Snapshot takes a tripwire snapshot of the protected and masked host
	// paths before the command starts and restores it after the sandbox is
	// gone; Restored hears what was put back.
	Snapshot bool
	Restored func(changes []tripwire.Change, err error)
	// OnTamper, when set, watches the snapshot while the command runs and
	// is called with the first change (the caller stops the run).
	OnTamper func(tripwire.Change)
	// OnFinding hears each finding of the checks at the end of the run
	// (see Finding); nil prints nothing.
	OnFinding func(Finding)
	// GitChecked, when set, has the workdir's git metadata recorded before
	// the command starts and checked once the sandbox is gone (gitguard);
	// it hears what was moved aside, or why the check could not be made.
	GitChecked func(found []gitguard.Finding, err error)
}

// Listeners are the sockets init made inside the sandbox (sandbox.Listeners).
type Listeners struct {
	HTTP, SOCKS5, DNSTCP, Auth net.Listener
	Slurm                      net.Listener // nil without Job.Slurm
	DNSUDP                     net.PacketConn
	// Capture holds the capture listener (package capture).
	Capture []net.Listener
}

// run runs j once in a sandbox that placer puts in its cgroup and serve
// serves, whose denials file feed receives (Services.Run supplies them),
// and returns the command's exit status. Whatever run returns, the
// sandbox is gone and the placeholders with it. Each stage of h.Stages is
// called at most once, in order; one that fails stops the run there, and
// what the earlier stages made is undone before run returns.
func run(j Job, h Hooks, placer sandbox.InitPlacer, serve func(Listeners), feed func(*os.File), eng *engine.Engine, serveEngine func(engine.Listeners)) (int, error) {
	if h.Warn == nil {
		h.Warn = func(string, ...any) {}
	}
	// First in, last out: held before the sandbox makes a mount point in
	// the HOME, the tidy-up runs once it is gone.
	tidyHome := holdHome(j)
	defer tidyHome()
	st := h.Stages
	// No garbage collection while the sandbox is built (a few MiB are
	// allocated, and a cycle costs the start a millisecond on a small
	// machine); it is back on once the command runs.
	gcPercent := debug.SetGCPercent(-1)
	gcOn := sync.OnceFunc(func() { debug.SetGCPercent(gcPercent) })
	pr := prepare(j, h)
	if pr.err == nil && st.Planned != nil {
		pr.err = st.Planned()
	}
	reviewTaken, reviewCheck, review := reviewAt(j, h)
	var closers []io.Closer
	gone := false // the sandbox ran and is gone: the checks are its
	defer func() {
		for _, c := range closers {
			c.Close()
		}
		review()
		pr.cleanup()
		gcOn()
		if gone && st.Checked != nil {
			st.Checked()
		}
	}()
	if pr.err != nil {
		return sandbox.ExitSetup, pr.err
	}
	if h.Debug != nil {
		h.Debug("mount plan", pr.spec.Plan)
	}
	var mapIDs func(int) error
	if eng != nil {
		pr.spec.Engine = true
		pr.spec.Plan.Store = j.storePath
		pr.spec.Plan.StoreDev, pr.spec.Plan.StoreIno = j.storeID[0], j.storeID[1]
		mapIDs = eng.MapIDs
		defer eng.Close()
	}
	sb, err := sandbox.Start(pr.spec, sandbox.Options{
		Stdin: h.Stdin, Stdout: h.Stdout, Stderr: h.Stderr,
		Placer:       placer,
		MapIDs:       mapIDs,
		BeforeMounts: pr.ready,
		OnStart:      st.InitStarted,
		OnListeners: func(files []*os.File) error {
			cs, err := serveListeners(files, serve)
			closers = append(closers, cs...)
			return err
		},
		OnFeed: func(f *os.File) error {
			if feed == nil {
				return f.Close()
			}
			feed(f)
			return nil
		},
		OnStore: func(f *os.File) error {
			if eng == nil {
				return f.Close()
			}
			eng.UseStore(f)
			return nil
		},
		OnCaptureOff: func(err error) {
			h.Warn("transparent capture is off: %v; programs that ignore the proxy variables cannot connect out", err)
		},
		OnPTY: h.OnPTY,
		BeforeCommand: func() error {
			reviewTaken()
			if err := pr.recorded(); err != nil {
				return err
			}
			if eng != nil {
				h.Progress.Step("starting the container engine")
				err := eng.Start()
				h.Progress.Done()
				if err != nil {
					return err
				}
				closers = append(closers, listenersCloser(eng.Listeners))
				if serveEngine != nil {
					serveEngine(eng.Listeners)
				} else {
					eng.Listeners.Close() // network none: nobody answers there
				}
			}
			if st.Wired != nil {
				return st.Wired()
			}
			return nil
		},
		OnCommand: func() {
			gcOn()
			if st.CommandStarted != nil {
				st.CommandStarted()
			}
		},
		OnQuiet: func() {
			if st.CommandExited != nil {
				st.CommandExited()
			}
			// Nothing inside can act any more: the listeners close
			// and the files to run soon are read again beside the
			// placeholders' release, which runs here, on init's
			// messages, with no hand-off to another thread.
			go func() {
				for _, c := range closers {
					c.Close()
				}
				reviewCheck()
			}()
			pr.removeSoon()
		},
	})
	if err != nil {
		var se *sandbox.StepError
		if errors.As(err, &se) {
			return se.Code, err
		}
		return sandbox.ExitSetup, err
	}
	if pr.snap != nil && h.OnTamper != nil {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			if err := pr.snap.Watch(ctx, h.OnTamper); err != nil {
				// Blind is as bad as tampered: the caller stops the run.
				h.OnTamper(tripwire.Change{Kind: tripwire.Blind, Detail: err.Error()})
			}
		}()
	}
	code, err := sb.Wait()
	gone = true
	if st.SandboxGone != nil {
		st.SandboxGone()
	}
	return code, err
}

// prepared is what run makes on the host before init starts: the plan, and
// the placeholders that protect missing paths, which are made while init
// starts (init mounts nothing before they exist and are recorded; see
// ready).
type prepared struct {
	// sweepChecks is the end-of-run sweep of the host's trees (sweep in
	// review.go), run by cleanup once the placeholders and the
	// quarantine are done with them: a directory moved under a walk
	// would end it.
	sweepChecks func() []Finding
	spec        sandbox.Spec
	err         error
	snap        *tripwire.Snapshot
	restored    func([]tripwire.Change, error)
	// claimOnce makes the placeholders (claim), in the goroutine prepare
	// starts or in the first ready, whichever comes first; madeErr is
	// what became of them.
	claimOnce    sync.Once
	claim        func()
	madeErr      error
	placeholders []mount.Placeholder
	excluded     chan struct{} // closed once the hosts' info/exclude name them (or need not)
	git          *gitguard.Guard
	gitErr       error
	gitRecorded  chan struct{} // closed once gitguard.Before returned
	gitChecked   func([]gitguard.Finding, error)
	release      func() error
	// The exit check rescans the trees with the configuration the start
	// scanned them with, to find what the command created.
	id        string
	mountCfg  mount.Config
	scan      mount.Scan
	records   mount.Records
	onFinding func(Finding)
	warn      func(string, ...any)
	once      sync.Once
	// What the checks after the command found; done is closed once they
	// ran (see removeSoon).
	done        chan struct{}
	releaseErr  error
	findings    []Finding
	gitFound    []gitguard.Finding
	gitAfterErr error
}

func prepare(j Job, h Hooks) *prepared {
	p := j.Policy
	pr := &prepared{warn: h.Warn, release: func() error { return nil }, done: make(chan struct{}), restored: h.Restored, excluded: make(chan struct{}),
		claim: func() {}, id: j.ID, onFinding: h.OnFinding}
	since := review.Start() // as the kernel stamps files
	pr.sweepChecks = func() []Finding { return sweepFindings(j, pr.scan.Trees, since) }
	// Placeholders a killed stockade could not remove are removed now.
	records := mount.Records{Dir: j.Records, ExcludeProblem: excludeProblem(h)}
	if err := records.Sweep(); err != nil {
		h.Warn("%v", err)
	}
	cfg := sandbox.Config{
		ID: j.ID, Workdir: p.Workdir, Home: j.Home, HomeSource: j.HomeSource,
		RO: p.RO, RW: p.RW, Protect: p.Protect, Mask: p.Mask, Unmask: p.Unmask,
		Argv: j.Argv, Env: j.Env, TTY: h.TTY, MaxProcs: j.MaxProcs,
		Proxy: p.Network == "proxy", Slurm: j.Slurm != nil, HomeProtect: j.HomeProtect, Hold: policy.HeldMask,
		NoHold: policy.NoPlaceholders(), TmpfsSize: policy.TmpfsBudget(p.Memory), Tun: j.Containers,
		SocketDirs: j.socketDirs,
		GitConfig:  j.GitConfig,
	}
	if j.Denials && p.Network == "proxy" {
		cfg.DenialsAt = denial.Path
	}
	if j.Slurm != nil {
		cfg.SystemHide = slurm.Hidden()
	}
	pr.mountCfg, pr.records = cfg.MountConfig(), records
	cfg.Passwd, cfg.Group = sandbox.Accounts()
	sc := mount.ScanTrees(pr.mountCfg, mount.OS{})
	if sc.Err != nil {
		pr.claimOnce.Do(func() {})
		close(pr.excluded)
		pr.err = fmt.Errorf("planning the filesystem view: %w", sc.Err)
		return pr
	}
	if len(sc.Links) > 0 {
		pr.claimOnce.Do(func() {})
		close(pr.excluded)
		pr.err = fmt.Errorf("planning the filesystem view: %w", &mount.LinkError{Paths: sc.Links})
		return pr
	}
	planned := mount.Split(sc.Missing)
	// A placeholder another live sandbox of this project made is found
	// as an existing path: it is borrowed, so that its owner hands it
	// over instead of removing it from under this sandbox.
	if live := records.Live(); len(live) > 0 {
		for _, f := range append(sc.Protect, sc.Mask...) {
			if phs, ok := live[f.Path]; ok {
				ph := phs[0]
				planned = append(planned, mount.Placeholder{Path: ph.Path, Root: ph.Root, Dir: ph.Dir})
			}
		}
	}
	// git inside leaves the placeholders out: they are not the agent's
	// files to add (see mount.GitExclude).
	top := workTreeTop(p.Workdir)
	if top != "" {
		if ex := mount.GitExclude(top, planned); ex != "" {
			cfg.GitExclude = ex
			cfg.Env = excludesFileEnv(cfg.Env, mount.GitExcludePath)
		}
	}
	// So does git on the host, through the repositories' info/exclude,
	// written once they are made (Records.Exclude): the command waits
	// for it (recorded), init does not.
	inRepo := setTops(planned, p.Workdir, top)
	claim := func() error {
		ps, release, err := records.Claim(j.ID, planned)
		if err == nil {
			pr.placeholders, pr.release = ps, release
		}
		return err
	}
	exclude := func(err error) {
		if err == nil {
			records.Exclude(pr.placeholders)
		}
		close(pr.excluded)
	}
	if !inRepo {
		close(pr.excluded) // nothing to write, nothing to wait for
	}
	if h.Snapshot {
		// The snapshot covers the placeholders, so they come first.
		pr.err = claim()
		pr.claimOnce.Do(func() {})
		if inRepo {
			go exclude(pr.err)
		}
		if pr.err != nil {
			return pr
		}
		snap, err := tripwire.Take(sc.Watched())
		switch {
		case err != nil && h.OnTamper != nil:
			pr.err = fmt.Errorf("taking the tripwire snapshot: %w", err)
			return pr
		case err != nil:
			h.Warn("protected paths are not snapshotted, so they cannot be restored: %v", err)
		}
		pr.snap = snap
	} else {
		// Plan as if they existed, and make them meanwhile (or when
		// init needs them, if this has not started by then).
		pr.claim = func() {
			pr.madeErr = claim()
			if inRepo {
				go exclude(pr.madeErr)
			}
		}
		go pr.claimOnce.Do(pr.claim)
	}
	pr.scan = sc
	if h.GitChecked != nil {
		// While init starts; the command waits for it (recorded). A
		// placeholder it sees or not is no change: none is left at the end.
		pr.gitChecked, pr.gitRecorded = h.GitChecked, make(chan struct{})
		nested := sc.GitDirs()
		go func() {
			defer close(pr.gitRecorded)
			pr.git, pr.gitErr = gitguard.Before(p.Workdir, j.ID, nested...)
			if pr.git != nil {
				pr.git.AllowHooks = p.AllowHooks
			}
		}()
	}
	held := sc.Hold()
	cfg.Scan = &held
	pr.spec, pr.err = sandbox.NewSpec(cfg, mount.OS{})
	return pr
}

// ready waits until the placeholders exist and are recorded (or could not
// be made): init may mount then, and a stockade killed from then on has
// them removed by the next one.
func (pr *prepared) ready() error {
	pr.claimOnce.Do(pr.claim)
	return pr.madeErr
}

// recorded waits until the git metadata is recorded: the command may
// start then.
func (pr *prepared) recorded() error {
	<-pr.excluded
	if pr.gitRecorded != nil {
		<-pr.gitRecorded
	}
	return nil
}

// removeSoon restores the snapshot, removes the placeholders, then runs
// the checks of what the command left behind, and returns when they are
// done. It is called once no process of the sandbox is left (init says so
// before it exits, so the checks run while the kernel tears the namespaces
// down), or at cleanup: nothing inside can undo the restore or change what
// the checks read.
func (pr *prepared) removeSoon() {
	pr.once.Do(func() {
		func() {
			defer close(pr.done)
			pr.ready()
			if pr.snap != nil {
				changes, err := pr.snap.Restore()
				if pr.restored != nil && (len(changes) > 0 || err != nil) {
					pr.restored(changes, err)
				}
			}
			// The scan for what the command created runs beside the
			// release: it leaves out the paths the placeholders held
			// (mount.Scan.Created), and a placeholder directory that goes
			// while it is walked is nothing to it. The git check reads
			// every directory it meets, so it waits for the release.
			// (In a goroutine, or here after the rest if that has not
			// started by then: a second core woken from idle can take
			// a few tenths of a millisecond to run it.)
			var scanned sync.Once
			scan := func() { pr.findings = pr.created() }
			if pr.err == nil {
				go scanned.Do(scan)
			}
			<-pr.excluded // its write is done before the release's
			pr.releaseErr = pr.release()
			if pr.err == nil {
				pr.checkGit()
				scanned.Do(scan)
			}
		}()
	})
}

// checkGit checks the git metadata of the workdir against what was
// recorded before the command started (gitguard).
func (pr *prepared) checkGit() {
	if pr.gitRecorded == nil {
		return
	}
	<-pr.gitRecorded
	pr.gitAfterErr = pr.gitErr
	if pr.git != nil {
		pr.gitFound, pr.gitAfterErr = pr.git.After()
		if pr.gitErr != nil {
			pr.warn("%v", pr.gitErr)
		}
	}
}

// cleanup waits for removeSoon (starting it if init never said the sandbox
// was quiet), then reports what the checks found. It runs only after the
// sandbox is gone.
func (pr *prepared) cleanup() {
	pr.removeSoon()
	<-pr.done
	if pr.releaseErr != nil {
		pr.warn("%v", pr.releaseErr)
	}
	if pr.err != nil {
		return // nothing ran
	}
	findings := pr.findings
	if pr.sweepChecks != nil {
		findings = append(findings, pr.sweepChecks()...)
	}
	for _, f := range findings {
		if pr.onFinding != nil {
			pr.onFinding(f)
		}
	}
	if pr.gitRecorded != nil && (pr.git == nil || len(pr.gitFound) > 0 || pr.gitAfterErr != nil) {
		pr.gitChecked(pr.gitFound, pr.gitAfterErr)
	}
}

// created moves aside what the command created at protected or masked
// names that no placeholder held, and returns a finding for each.
func (pr *prepared) created() []Finding {
	cfg := pr.mountCfg
	after := mount.ScanTrees(cfg, mount.OS{})
	var notChecked []Finding
	if after.Trees.Workdir == "" {
		// The trees can no longer be resolved (a --ro tree in the
		// project made a symlink): the workdir alone is scanned, and the
		// rest is said loudly.
		notChecked = append(notChecked, Finding{Kind: FindingUnhandled, Path: cfg.Workdir,
			Detail: fmt.Sprintf("not every tree could be checked for what the command created: %v", after.Err)})
		cfg.RO, cfg.RW = nil, nil
		if after = mount.ScanTrees(cfg, mount.OS{}); after.Trees.Workdir == "" {
			return notChecked
		}
	}
	// A directory made unlistable hides only what is below it: the rest
	// of the scan is whole and is acted on. What is below it is checked by
	// no one, not by the next run either (it takes what is there for the
	// user's), so each such directory is said loudly.
	for _, d := range after.Unlisted {
		notChecked = append(notChecked, Finding{Kind: FindingUnhandled, Path: d,
			Detail: "the command made it unlistable, so what it created in it (a hook, an .mcp.json, a nested repository) was not checked, and no later run will check it: look at everything in it before any tool on the host uses it (chmod u+rx, then ls -la; a directory a container gave another id: podman unshare ls -la)"})
	}
	// Placeholders of live sandboxes of this project are theirs, as long
	// as they are the ones those made (another object at the path, or a
	// placeholder given content, is this command's doing, or another's
	// that no one else checks).
	live := pr.records.Live()
	var created []mount.Found
	for _, f := range pr.scan.Created(after) {
		if !slices.ContainsFunc(live[f.Path], mount.Unchanged) {
			created = append(created, f)
		}
	}
	return append(notChecked, quarantine(pr.id, created)...)
}

// listenersCloser closes the engine's listeners at the end of a run.
type listenersCloser engine.Listeners

func (l listenersCloser) Close() error {
	engine.Listeners(l).Close()
	return nil
}

// RecordsDir is where placeholder records of a user live.
func RecordsDir(stateHome string) string {
	return filepath.Join(stateHome, "stockade", "placeholders")
}

// serveListeners turns the listener descriptors from init into net values
// and hands them to fn; it returns what must be closed to stop serving.
func serveListeners(files []*os.File, fn func(Listeners)) ([]io.Closer, error) {
	defer func() {
		for _, f := range files {
			f.Close() // the net values hold their own duplicates
		}
	}()
	var closers []io.Closer
	fail := func(err error) ([]io.Closer, error) {
		for _, c := range closers {
			c.Close()
		}
		return nil, fmt.Errorf("serving the sandbox's listeners: %w", err)
	}
	var ls Listeners
	for i, l := range sandbox.Listeners[:len(files)] {
		if l.Network == "udp" {
			pc, err := net.FilePacketConn(files[i])
			if err != nil {
				return fail(err)
			}
			closers = append(closers, pc)
			ls.DNSUDP = pc
			continue
		}
		ln, err := net.FileListener(files[i])
		if err != nil {
			return fail(err)
		}
		closers = append(closers, ln)
		switch l.Name {
		case "http":
			ls.HTTP = ln
		case "socks5":
			ls.SOCKS5 = ln
		case "dns":
			ls.DNSTCP = ln
		case "auth":
			ls.Auth = ln
		case "slurm":
			ls.Slurm = ln
		case "capture":
			ls.Capture = append(ls.Capture, ln)
		}
	}
	if fn != nil {
		fn(ls)
	}
	return closers, nil
}

// setTops sets the Top of each placeholder in planned to the top of the
// git work tree that holds it on the host (the workdir's is top), and
// reports whether any is in one.
func setTops(planned []mount.Placeholder, workdir, top string) bool {
	tops := map[string]string{workdir: top}
	in := false
	for i, ph := range planned {
		t, ok := tops[ph.Root]
		if !ok {
			t = workTreeTop(ph.Root)
			tops[ph.Root] = t
		}
		planned[i].Top = t
		in = in || t != ""
	}
	return in
}

// excludeProblem reports what kept a repository's info/exclude from
// leaving the placeholders out: a warning, once per repository, or a
// debug line when that is no fault (mount.ErrExcludeSkipped).
func excludeProblem(h Hooks) func(error) {
	var mu sync.Mutex
	said := map[string]bool{}
	return func(err error) {
		var ee *mount.ExcludeError
		key := err.Error()
		if errors.As(err, &ee) {
			key = ee.Top
		}
		mu.Lock()
		defer mu.Unlock()
		if said[key] {
			return
		}
		said[key] = true
		switch {
		case !errors.Is(err, mount.ErrExcludeSkipped):
			h.Warn("%v", err)
		case h.Debug != nil:
			h.Debug("git exclude", err.Error())
		}
	}
}

// workTreeTop is the directory at or above workdir that holds a .git (a
// directory, or the file of a linked worktree or submodule), "" when there
// is none: the top of the work tree git inside the sandbox works in. Only
// lstat: what is found names where git's own files would be, nothing is
// read or followed.
func workTreeTop(workdir string) string {
	for dir := filepath.Clean(workdir); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		if dir == "/" || dir == "." {
			return ""
		}
	}
}

// excludesFileEnv returns env with git told to read path as
// core.excludesFile, through the GIT_CONFIG_COUNT entries git takes from
// the environment (after those env already has). It is a convenience for
// the agent's git, not a wall: the command may unset it.
func excludesFileEnv(env []string, path string) []string {
	n := 0
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if c, err := strconv.Atoi(v); err == nil && c >= 0 {
				n = c
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(n+1),
		"GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=core.excludesFile",
		"GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+path)
}
