package slurm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// JobEntry is the entry point the job's sandbox runs first (inner.go):
// it opens the job's output and input inside the sandbox and executes the
// agent's script or command.
const JobEntry = "__stockade_slurm_job"

// submission is a checked submission: what goes to Slurm, and what the
// job's sandbox opens itself.
type submission struct {
	pass             []string // options passed on to Slurm, under their full names
	dir              string   // the job's working directory, in the project
	out, err, in     string   // the output, error and input paths ("" none)
	openMode         string
	parsable, hasOut bool
	exports          []string // NAME=VALUE for the job's sandbox
}

// check checks the options of a submission from cwd (in the project).
func (c *Chaperon) check(opts []opt, cwd string) (submission, error) {
	s := submission{dir: cwd}
	// The working directory first: the paths are relative to it.
	for _, o := range opts {
		if o.flag.Long == "chdir" {
			d := o.value
			if !filepath.IsAbs(d) {
				d = filepath.Join(cwd, d)
			}
			d = filepath.Clean(d)
			if !within(d, c.cfg.Workdir) {
				return s, refuse("--chdir %s is outside the project %s", o.value, c.cfg.Workdir)
			}
			s.dir = d
		}
	}
	for _, o := range opts {
		f := o.flag
		if f.Refused != "" {
			return s, refuse("%s %s", o.given, f.Refused)
		}
		switch f.Kind {
		case path:
			p, err := c.projectPath(o, s.dir)
			if err != nil {
				return s, err
			}
			switch f.Long {
			case "output":
				s.out, s.hasOut = p, true
			case "error":
				s.err = p
			case "input":
				s.in = p
			}
		case dir:
		case export:
			ex, err := c.exports(o.value)
			if err != nil {
				return s, err
			}
			s.exports = ex
		case wrap: // the script (sbatch)
		default:
			switch f.Long {
			case "parsable":
				s.parsable = true
			case "dependency":
				if err := c.dependency(o.value); err != nil {
					return s, err
				}
				s.pass = append(s.pass, o.line())
			case "nodelist", "exclude":
				if err := nodeNames(o); err != nil {
					return s, err
				}
				s.pass = append(s.pass, o.line())
			case "open-mode":
				if o.value != "append" && o.value != "truncate" {
					return s, refuse("--open-mode %q: write append or truncate", o.value)
				}
				s.openMode = o.value
			default:
				s.pass = append(s.pass, o.line())
			}
		}
	}
	return s, nil
}

// nodeNames refuses a node list that names a file: srun and sbatch read
// a --nodelist or --exclude holding a / as a file of node names, on the
// host, as the user, outside the sandbox (a file of the user's, or one
// that never ends, such as /dev/zero).
func nodeNames(o opt) error {
	if strings.Contains(o.value, "/") {
		return refuse("--%s %s names a file, which Slurm would read outside the sandbox; name the nodes (n[1-4],n7)", o.flag.Long, o.value)
	}
	return nil
}

// projectPath checks an output, error or input path: in the project (or
// /dev/null). The job's sandbox opens it, so a symlink the agent plants
// there resolves inside the sandbox's view, never on the node's.
func (c *Chaperon) projectPath(o opt, dir string) (string, error) {
	v := o.value
	if v == "" {
		return "", refuse("--%s needs a path in the project", o.flag.Long)
	}
	if v == "/dev/null" || v == "none" && o.flag.Long != "output" {
		return "/dev/null", nil
	}
	p := v
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if !within(p, c.cfg.Workdir) || p == c.cfg.Workdir {
		return "", refuse("--%s %s is outside the project %s; write it in the project", o.flag.Long, v, c.cfg.Workdir)
	}
	return p, nil
}

// dependency checks --dependency: every job it names must be in scope,
// or Slurm's answer (a dependency on a job that does not exist is an
// error) would tell the agent which ids other users' jobs hold.
func (c *Chaperon) dependency(v string) error {
	scoped := c.scoped()
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '?' }) {
		typ, ids, ok := strings.Cut(part, ":")
		if !ok {
			if typ != "singleton" {
				return refuse("--dependency %s: %q is not TYPE:JOBID[:JOBID…] or singleton", v, part)
			}
			continue
		}
		for _, id := range strings.Split(ids, ":") {
			id, _, _ = strings.Cut(id, "+") // afterok:12+5 (a time)
			if !c.inScope(id, scoped) {
				return refuse("--dependency %s: job %s was not submitted through stockade in this %s's scope", v, id, c.cfg.Scope)
			}
		}
	}
	return nil
}

// isEnvName reports whether s is a variable name ([A-Za-z_][A-Za-z0-9_]*).
// (Not a regexp: compiling one at package init would cost every start.)
func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// exports checks --export: ALL and NONE give the job the sandbox's own
// environment; NAME=VALUE sets a variable the administrator allows.
func (c *Chaperon) exports(v string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e == "ALL" || e == "NONE" || e == "NIL" {
			continue
		}
		name, _, ok := strings.Cut(e, "=")
		switch {
		case !isEnvName(name):
			return nil, refuse("--export %q: %q is not a variable name", v, name)
		case !slices.Contains(c.cfg.Admin.AllowExport, name):
			return nil, refuse("--export %s: the job's environment is the sandbox's; %s is not a variable the administrator allows (/etc/stockade/config.json slurm.allow_export)", v, name)
		case !ok:
			return nil, refuse("--export %s: write %s=VALUE; the job does not see the submitting shell's variables", v, name)
		}
		out = append(out, e)
	}
	return out, nil
}

// inProject checks the shim's working directory.
func (c *Chaperon) inProject(cwd string) error {
	if !filepath.IsAbs(cwd) || filepath.Clean(cwd) != cwd || !within(cwd, c.cfg.Workdir) {
		return refuse("the working directory %q is outside the project %s; cd into the project", cwd, c.cfg.Workdir)
	}
	return nil
}

func (c *Chaperon) sbatch(req Request, sh *shim) (Reply, error) {
	if err := c.inProject(req.Cwd); err != nil {
		return Reply{}, err
	}
	p, err := parse(c.cfg.table(sbatchFlags()), req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	var script []byte
	name := "sbatch"
	if w, ok := p.value("wrap"); ok {
		if len(p.rest) > 0 {
			return Reply{}, refuse("--wrap and a script %s: give one", p.rest[0])
		}
		script = []byte("#!/bin/sh\n# This script was generated by sbatch --wrap.\n\n" + w + "\n")
		name = "wrap"
	} else {
		script = req.Script
		if len(script) == 0 {
			return Reply{Code: 1, Stderr: []byte("sbatch: error: Batch script is empty!\n")}, nil
		}
		if !strings.HasPrefix(string(script), "#!") {
			return Reply{Code: 1, Stderr: []byte("sbatch: error: This does not look like a batch script.  The first\nsbatch: error: line must start with #! followed by the path to an interpreter.\n")}, nil
		}
		if len(p.rest) > 0 {
			name = filepath.Base(p.rest[0])
		}
	}
	words, err := directives(script)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	inScript, err := parse(c.cfg.table(sbatchFlags()), words)
	if err != nil {
		return Reply{}, refuse("#SBATCH %v", err)
	}
	if len(inScript.rest) > 0 {
		return Reply{}, refuse("#SBATCH line holds %q, which is not an option", inScript.rest[0])
	}
	s, err := c.check(append(inScript.opts, p.opts...), req.Cwd)
	if err != nil {
		return Reply{}, err
	}
	if !s.hasOut {
		s.out = filepath.Join(s.dir, "slurm-%j.out") // sbatch's default, opened inside
	}
	jobDir, err := c.jobDir()
	if err != nil {
		return Reply{}, err
	}
	scriptPath := filepath.Join(jobDir, "script")
	if err := os.WriteFile(scriptPath, script, 0o700); err != nil {
		return Reply{}, fmt.Errorf("storing the job script: %w", err)
	}
	argv := append([]string{scriptPath}, p.rest[min(1, len(p.rest)):]...)
	wrapper := c.batchScript(jobDir, s, argv)
	args := []string{"--parsable"}
	if !p.has("job-name") && !inScript.has("job-name") {
		args = append(args, "--job-name="+name)
	}
	args = append(args, s.pass...)
	// The batch script goes on sbatch's standard input, so that Slurm
	// keeps it as it was written; Slurm's own output of the job goes
	// nowhere: slurmstepd would open a path in the job's directory as the
	// user, following links. The wrapper writes stockade's messages there
	// itself, making a new file (wrapMain).
	args = append(args, "--chdir="+jobDir, "--output=/dev/null")
	ctx, wait := c.ctx, p.has("wait") || inScript.has("wait")
	if !wait {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(c.ctx, queryTimeout)
		defer cancel()
	}
	// The job is recorded as soon as sbatch prints its id: with --wait,
	// long before sbatch returns, so that the queries and scancel reach it.
	// With --wait and a shim to stream to, the job's line goes out then
	// too, as the real sbatch prints it, not when the job ends.
	sum := sha256.Sum256(script)
	var id string
	var printed bool
	submitted := func(line string, regErr error) (stdout, stderr []byte) {
		if regErr != nil {
			stderr = fmt.Appendf(nil, "sbatch: warning: stockade could not record job %s, so its queries will not show it: %v\n", id, regErr)
		}
		if s.parsable {
			return []byte(line + "\n"), stderr
		}
		return fmt.Appendf(nil, "Submitted batch job %s\n", id), stderr
	}
	var first string
	var regErr error
	rep := c.runRealIn(ctx, strings.NewReader(wrapper), func(line string) {
		if jid, _, _ := strings.Cut(strings.TrimSpace(line), ";"); isJobID(jid) {
			id, regErr, first = jid, c.register(jid), strings.TrimSpace(line)
			os.WriteFile(filepath.Join(jobDir, "job"), []byte(id+"\n"), 0o600)
			c.event(EventSubmit, map[string]any{"command": "sbatch", "job": id, "script": req.ScriptName, "sha256": hex.EncodeToString(sum[:]), "args": req.Args, "dir": s.dir, "stored": scriptPath})
			if sh != nil && wait {
				sh.write(submitted(first, regErr))
				printed = true
			}
		}
	}, nil, "sbatch", args...)
	if id == "" {
		return rep, nil // refused by Slurm, or --test-only: no job
	}
	if printed {
		_, rep.Stdout, _ = bytes.Cut(rep.Stdout, []byte("\n")) // the line went out
		return rep, nil
	}
	stdout, stderr := submitted(first, regErr)
	rep.Stderr = append(rep.Stderr, stderr...)
	if !s.parsable {
		rep.Stdout = stdout
	}
	return rep, nil
}

// srunRun is an srun checked and made ready: the arguments of the real
// srun after any of its own, the submission and its job directory.
type srunRun struct {
	args   []string
	s      submission
	jobDir string
}

// prepareSrun checks an srun of req against the flag table and writes the
// wrapper its tasks run behind (as a job's command does). A reply that is
// not nil is srun's answer without running anything.
func (c *Chaperon) prepareSrun(req Request, table []Flag) (srunRun, *Reply, error) {
	if err := c.inProject(req.Cwd); err != nil {
		return srunRun{}, nil, err
	}
	p, err := parse(table, req.Args)
	if err != nil {
		return srunRun{}, nil, refuse("%v", err)
	}
	if len(p.rest) == 0 {
		return srunRun{}, &Reply{Code: 1, Stderr: []byte("srun: fatal: No command given to execute.\n")}, nil
	}
	// The real srun splits its whole command line at every bare ":", the
	// command's arguments included, into the components of a
	// heterogeneous job, each with options and a program of its own: what
	// followed a ":" would run with no stockade run in front of it.
	if slices.Contains(p.rest, hetSeparator) {
		return srunRun{}, nil, refuse("a bare %q starts another component of a heterogeneous job, whose command would run outside the sandbox; quote it inside sh -c if the command needs it", hetSeparator)
	}
	s, err := c.check(p.opts, req.Cwd)
	if err != nil {
		return srunRun{}, nil, err
	}
	jobDir, err := c.jobDir()
	if err != nil {
		return srunRun{}, nil, err
	}
	// srun starts the wrapper entry itself, with every value on its
	// command line: there is no script for another session to rewrite
	// before the step starts.
	args := append(slices.Clone(s.pass), "--chdir="+jobDir)
	args = append(args, c.wrapArgs(jobDir, s, "", filepath.Join(jobDir, jobIDFile))...)
	if slices.Contains(args, hetSeparator) { // a value of the session's policy
		os.RemoveAll(jobDir)
		return srunRun{}, nil, refuse("the session's policy holds a bare %q (a --mask, --ro or --env value?), which srun would take for another component of a heterogeneous job", hetSeparator)
	}
	return srunRun{args: append(args, p.rest...), s: s, jobDir: jobDir}, nil, nil
}

// hetSeparator is what separates the components of a heterogeneous job
// on srun's command line.
const hetSeparator = ":"

func (c *Chaperon) srun(req Request, sh *shim) (Reply, error) {
	r, early, err := c.prepareSrun(req, c.cfg.table(srunFlags()))
	if early != nil || err != nil {
		return derefReply(early), err
	}
	s, jobDir := r.s, r.jobDir
	// The job enters the registry as soon as it is known: while it waits
	// in the queue, by its working directory (the job directory, which
	// only this chaperon names: an agent's --chdir is in the project);
	// once it starts, by the id its wrapper, on the node, writes into the
	// job directory, which no sandbox can write (the job's mounts it
	// read-only). So squeue, scontrol show job and scancel reach it while
	// srun runs. The id never comes from srun's output, which the tasks
	// write, nor from the sandbox's environment.
	var (
		mu sync.Mutex
		id string
	)
	fields := map[string]any{"command": "srun", "args": req.Args, "dir": s.dir}
	record := func(jid string) bool {
		mu.Lock()
		defer mu.Unlock()
		if id != "" {
			return true
		}
		if jid == "" {
			return false
		}
		id = jid
		c.register(jid)
		fields["job"] = jid
		c.event(EventSubmit, fields)
		return true
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(jobIDPoll)
		defer t.Stop()
		next, wait := time.Now().Add(pendingPoll), pendingPoll
		for !record(readJobID(jobDir)) {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if time.Now().After(next) { // still not started: pending?
				if record(c.pendingJob(jobDir)) {
					return
				}
				wait = min(2*wait, maxPendingPoll)
				next = time.Now().Add(wait)
			}
		}
	}()
	rep := c.realWait(sh, "srun", r.args...)
	close(stop)
	<-stopped
	if !record(readJobID(jobDir)) { // no task ran: refused by Slurm, or cancelled while pending
		c.event(EventSubmit, fields)
	}
	return rep, nil
}

// jobIDPoll is how often a running srun's job directory is looked at for
// the job's id.
const jobIDPoll = 200 * time.Millisecond

// pendingPoll is how long an srun runs before the queue is asked whether
// its job waits there, and the first wait between two asks, which doubles
// up to maxPendingPoll.
const (
	pendingPoll    = time.Second
	maxPendingPoll = 15 * time.Second
)

// pendingJob is the id of the user's pending job whose working directory
// is jobDir, or "".
func (c *Chaperon) pendingJob(jobDir string) string {
	rep := c.real("squeue", "--me", "--noheader", "--states=PENDING", "--format=%i|%Z")
	if rep.Code != 0 {
		return ""
	}
	for _, line := range strings.Split(string(rep.Stdout), "\n") {
		if jid, wd, ok := strings.Cut(line, "|"); ok && wd == jobDir && isJobID(jid) {
			return jid
		}
	}
	return ""
}

// readJobID is the job id the wrapper wrote in jobDir, or "" when none
// (yet) is there whole.
func readJobID(jobDir string) string {
	f, err := os.OpenFile(filepath.Join(jobDir, jobIDFile), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil || !bytes.HasSuffix(data, []byte("\n")) {
		return "" // not written whole yet
	}
	if id := strings.TrimSpace(string(data)); isJobID(id) {
		return id
	}
	return ""
}

// derefReply is *r, or the zero Reply.
func derefReply(r *Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return *r
}

// jobIDFile is where a job's wrapper writes the job's id, in its job
// directory.
const jobIDFile = "slurm-job-id"

// isJobID reports whether s is a plain job id (digits).
func isJobID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// jobDir makes the directory of one submission, in the chaperon's
// directory, which no sandbox sees.
func (c *Chaperon) jobDir() (string, error) {
	d := filepath.Join(c.cfg.State, "jobs", fmt.Sprintf("%s-%d", c.cfg.Session, c.seq.Add(1)))
	if err := os.Mkdir(d, 0o700); err != nil {
		return "", fmt.Errorf("making the job's directory: %w", err)
	}
	return d, nil
}

// WrapEntry is the entry point Slurm starts on the compute node, as the
// user and outside any sandbox (wrapMain): `stockade WrapEntry LOG IDFILE
// N RUNARGS(N)... -- COMMAND...`. It adds the job's SLURM_* variables by
// name to the N flags of `stockade run` and executes `stockade run` with
// them and the rest. Everything it is given is on its command line or in
// the batch script Slurm keeps, never in a file of a directory the user
// can write, where another session's sandbox could rewrite it between
// the submission and the job's start.
const WrapEntry = "__stockade_slurm_wrap"

// wrapArgs is the command line Slurm runs for a job or a step of s: the
// wrapper entry, which runs the job's command (appended by the caller)
// under `stockade run` with the session's policy. log, when set, is where
// the wrapper writes stockade's own messages (%j is the job's id); idFile
// where it writes the job's id, for an srun's registry.
func (c *Chaperon) wrapArgs(jobDir string, s submission, log, idFile string) []string {
	run := slices.Clone(c.cfg.RunArgs)
	run = append(run, c.networkArgs()...)
	// The job's sandbox gets the chaperon in step mode: its srun starts a
	// step of this job under the same policy, and nothing more (step.go).
	run = append(run, "--slurm", "--slurm-step")
	run = append(run, "--ro", jobDir, "--log-level", "error")
	if !slices.Contains(c.cfg.RunArgs, c.cfg.Stockade) {
		run = append(run, "--ro", c.cfg.Stockade)
	}
	for _, e := range s.exports {
		run = append(run, "--env", e)
	}
	a := []string{c.cfg.Stockade, WrapEntry, log, idFile, strconv.Itoa(len(run))}
	a = append(a, run...)
	return append(a, "--", c.cfg.Stockade, JobEntry, s.dir, s.out, s.err, s.in, s.openMode, "--")
}

// batchScript is the script sbatch is given on its standard input for a
// job of s whose command is argv: it executes the wrapper entry. Slurm
// keeps it from the submission on; every value is quoted (quote), so the
// agent's words never reach a shell unquoted.
func (c *Chaperon) batchScript(jobDir string, s submission, argv []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# stockade: a job of session %s; the command runs under stockade run.\nexec", c.cfg.Session)
	for _, a := range append(c.wrapArgs(jobDir, s, filepath.Join(jobDir, "stockade-%j.log"), filepath.Join(jobDir, jobIDFile)), argv...) {
		b.WriteString(" " + quote(a))
	}
	b.WriteString("\n")
	return b.String()
}

// wrapArgv is what wrapMain executes for its arguments a (after the entry
// name) in the environment environ: `stockade run`'s argument list, with
// --env NAME for each SLURM_* and SLURMD_* variable, and the log and id
// files.
func wrapArgv(a, environ []string) (log, idFile string, argv []string, err error) {
	if len(a) < 3 {
		return "", "", nil, fmt.Errorf("usage: %s LOG IDFILE N RUNARGS... -- COMMAND...", WrapEntry)
	}
	n, err := strconv.Atoi(a[2])
	if err != nil || n < 0 || n > len(a)-3 {
		return "", "", nil, fmt.Errorf("%s: %q is not the count of the run flags that follow", WrapEntry, a[2])
	}
	argv = append([]string{"run"}, a[3:3+n]...)
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && slurmVar(name) {
			argv = append(argv, "--env", name)
		}
	}
	return a[0], a[1], append(argv, a[3+n:]...), nil
}

// slurmVar reports whether name is one of the job's Slurm variables
// (SLURM_* or SLURMD_*), passed on to its sandbox.
func slurmVar(name string) bool {
	rest, ok := strings.CutPrefix(name, "SLURM_")
	if !ok {
		rest, ok = strings.CutPrefix(name, "SLURMD_")
	}
	return ok && !strings.ContainsFunc(rest, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

// quote quotes s for sh: in single quotes, each ' written as '\”.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
