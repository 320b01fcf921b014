package slurm

import (
	"bytes"
	"slices"
	"strings"
)

// sentinels are two job ids no cluster hands out (above Slurm's largest
// MaxJobId), listed beside the scoped ones so that squeue always gets a
// list, which prints nothing for a job it does not hold, rather than one
// id, which fails ("Invalid job id specified").
const sentinels = "67108864,67108865"

const (
	refOtherUsers = "lists other users' jobs; stockade shows the jobs submitted through it (--slurm-scope)"
	refIterate    = "repeats until interrupted; run the command again instead"
)

var squeueFlags = []Flag{
	{Long: "noheader", Short: 'h', Kind: boolean}, {Long: "long", Short: 'l', Kind: boolean},
	{Long: "format", Short: 'o'}, {Long: "Format", Short: 'O'}, {Long: "sort", Short: 'S'},
	{Long: "states", Short: 't'}, {Long: "partition", Short: 'p'}, {Long: "name", Short: 'n'},
	{Long: "verbose", Short: 'v', Kind: boolean}, {Long: "all", Short: 'a', Kind: boolean},
	{Long: "array", Short: 'r', Kind: boolean}, {Long: "start", Kind: boolean}, {Long: "jobs", Short: 'j'},
	{Long: "me", Kind: boolean}, {Long: "qos", Short: 'q'},
	{Long: "iterate", Short: 'i', Refused: refIterate},
	{Long: "user", Short: 'u', Refused: refOtherUsers}, {Long: "account", Short: 'A', Refused: refOtherUsers},
	{Long: "clusters", Short: 'M', Refused: refCluster},
}

// scopedJobs is the --jobs list of a query: the ids asked for that are in
// scope (all of the scope when none are asked for), and whether every id
// asked for was out of scope.
func (c *Chaperon) scopedJobs(asked string) ([]string, bool) {
	scoped := c.scoped()
	if asked == "" {
		return scoped, false
	}
	var keep []string
	for _, id := range strings.Split(asked, ",") {
		if id != "" && c.inScope(id, scoped) {
			keep = append(keep, id)
		}
	}
	return keep, len(keep) == 0
}

var invalidJob = Reply{Code: 1, Stderr: []byte("slurm_load_jobs error: Invalid job id specified\n")}

func (c *Chaperon) squeue(req Request) (Reply, error) {
	p, err := parse(squeueFlags, req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	if len(p.rest) > 0 {
		return Reply{}, refuse("squeue takes options only; %q is not one", p.rest[0])
	}
	var args []string
	for _, o := range p.opts {
		if o.flag.Refused != "" {
			return Reply{}, refuse("%s %s", o.given, o.flag.Refused)
		}
		if o.flag.Long != "jobs" && o.flag.Long != "me" {
			args = append(args, o.line())
		}
	}
	asked, _ := p.value("jobs")
	jobs, none := c.scopedJobs(asked)
	if none {
		return invalidJob, nil
	}
	return c.real("squeue", append(args, "--jobs="+strings.Join(append(jobs, sentinels), ","))...), nil
}

var scancelFlags = []Flag{
	{Long: "signal", Short: 's'}, {Long: "batch", Short: 'b', Kind: boolean}, {Long: "full", Short: 'f', Kind: boolean},
	{Long: "quiet", Short: 'Q', Kind: boolean}, {Long: "verbose", Short: 'v', Kind: boolean}, {Long: "hurry", Short: 'H', Kind: boolean},
	{Long: "user", Short: 'u', Refused: "selects jobs by filter; name the job ids"}, {Long: "me", Kind: boolean, Refused: "selects jobs by filter; name the job ids"},
	{Long: "name", Short: 'n', Refused: "selects jobs by filter; name the job ids"}, {Long: "partition", Short: 'p', Refused: "selects jobs by filter; name the job ids"},
	{Long: "state", Short: 't', Refused: "selects jobs by filter; name the job ids"}, {Long: "account", Short: 'A', Refused: "selects jobs by filter; name the job ids"},
	{Long: "nodelist", Short: 'w', Refused: "selects jobs by filter; name the job ids"}, {Long: "interactive", Short: 'i', Kind: boolean, Refused: "asks on a terminal the chaperon does not have"},
	{Long: "clusters", Short: 'M', Refused: refCluster},
}

func (c *Chaperon) scancel(req Request) (Reply, error) {
	p, err := parse(scancelFlags, req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	var args []string
	for _, o := range p.opts {
		if o.flag.Refused != "" {
			return Reply{}, refuse("%s %s", o.given, o.flag.Refused)
		}
		args = append(args, o.line())
	}
	if len(p.rest) == 0 {
		return Reply{Code: 1, Stderr: []byte("scancel: error: No job identification provided\n")}, nil
	}
	scoped := c.scoped()
	for _, id := range p.rest {
		if !c.inScope(id, scoped) || strings.HasPrefix(id, "-") {
			return Reply{}, refuse("job %s was not submitted through stockade in this %s's scope (--slurm-scope %s)", id, c.cfg.Scope, c.cfg.Scope)
		}
	}
	c.event(EventCancel, map[string]any{"command": "scancel", "jobs": p.rest, "args": req.Args})
	return c.real("scancel", append(append(args, "--"), p.rest...)...), nil
}

var scontrolFlags = []Flag{
	{Long: "oneliner", Short: 'o', Kind: boolean}, {Long: "details", Short: 'd', Kind: boolean},
	{Long: "quiet", Short: 'Q', Kind: boolean}, {Long: "verbose", Short: 'v', Kind: boolean},
	{Long: "all", Short: 'a', Kind: boolean},
	{Long: "clusters", Short: 'M', Refused: refCluster},
}

// scontrol passes through show node|partition, scopes show job and the
// job controls, and refuses the rest: every other subcommand changes or
// reveals the cluster's configuration.
func (c *Chaperon) scontrol(req Request) (Reply, error) {
	p, err := parse(scontrolFlags, req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	var args []string
	for _, o := range p.opts {
		if o.flag.Refused != "" {
			return Reply{}, refuse("%s %s", o.given, o.flag.Refused)
		}
		args = append(args, o.line())
	}
	if len(p.rest) == 0 {
		return Reply{}, refuse("scontrol's interactive mode is not chaperoned; give a subcommand (show job|node|partition, hold, release, requeue)")
	}
	sub := strings.ToLower(p.rest[0])
	switch sub {
	case "show", "sho", "sh":
		if len(p.rest) < 2 {
			return Reply{}, refuse("scontrol show needs an entity: job, node or partition")
		}
		ent := strings.ToLower(p.rest[1])
		switch ent {
		case "node", "nodes", "partition", "partitions":
			if len(p.rest) > 3 {
				return Reply{}, refuse("scontrol show %s takes one name", ent)
			}
			if err := noOptions("scontrol", p.rest[1:]); err != nil {
				return Reply{}, err
			}
			return c.real("scontrol", append(append(args, "show"), p.rest[1:]...)...), nil
		case "job", "jobs":
			return c.showJobs(args, p.rest[2:])
		}
		return Reply{}, refuse("scontrol show %s reveals the cluster's configuration; stockade passes through show job, node and partition", p.rest[1])
	case "hold", "uhold", "release", "requeue", "requeuehold", "suspend", "resume", "top":
		if sub == "suspend" || sub == "resume" || sub == "top" {
			return Reply{}, refuse("scontrol %s is an administrator's command", sub)
		}
		if len(p.rest) != 2 {
			return Reply{}, refuse("scontrol %s takes one job list (ID[,ID...])", sub)
		}
		scoped := c.scoped()
		ids := strings.Split(p.rest[1], ",")
		for _, id := range ids {
			if !c.inScope(id, scoped) {
				return Reply{}, refuse("job %s was not submitted through stockade in this %s's scope (--slurm-scope %s)", id, c.cfg.Scope, c.cfg.Scope)
			}
		}
		c.event(EventControl, map[string]any{"command": "scontrol", "jobs": ids, "args": req.Args})
		return c.real("scontrol", append(args, sub, p.rest[1])...), nil
	}
	return Reply{}, refuse("scontrol %s is an administrator's command, or one stockade does not chaperon", p.rest[0])
}

// showJobs answers scontrol show job [ID]: one job in scope, or all of
// them, each as the real scontrol shows it.
func (c *Chaperon) showJobs(args, rest []string) (Reply, error) {
	if len(rest) > 1 {
		return Reply{}, refuse("scontrol show job takes one job id")
	}
	var ids []string
	if len(rest) == 1 {
		jobs, none := c.scopedJobs(rest[0])
		if none || strings.Contains(rest[0], ",") {
			return invalidJob, nil
		}
		ids = jobs
	} else {
		ids = c.scoped()
	}
	var out, errb bytes.Buffer
	shown := 0
	for _, id := range ids {
		r := c.real("scontrol", append(slices.Clone(args), "show", "job", id)...)
		if r.Code != 0 {
			if len(rest) == 1 {
				return r, nil
			}
			continue // finished and purged
		}
		out.Write(r.Stdout)
		errb.Write(r.Stderr)
		shown++
	}
	if shown == 0 && len(rest) == 0 {
		return Reply{Stdout: []byte("No jobs in the system\n")}, nil
	}
	return Reply{Stdout: out.Bytes(), Stderr: errb.Bytes()}, nil
}

// sinfoFlags are sinfo's options (Slurm 22.05): what it shows and how.
// It passes through, but not to another cluster, and not in a loop.
var sinfoFlags = []Flag{
	{Long: "all", Short: 'a', Kind: boolean}, {Long: "dead", Short: 'd', Kind: boolean},
	{Long: "exact", Short: 'e', Kind: boolean}, {Long: "noheader", Short: 'h', Kind: boolean},
	{Long: "hide", Kind: boolean}, {Long: "json", Kind: boolean}, {Long: "yaml", Kind: boolean},
	{Long: "local", Kind: boolean}, {Long: "long", Short: 'l', Kind: boolean},
	{Long: "nodes", Short: 'n'}, {Long: "noconvert", Kind: boolean}, {Long: "Node", Short: 'N', Kind: boolean},
	{Long: "format", Short: 'o'}, {Long: "Format", Short: 'O'}, {Long: "partition", Short: 'p'},
	{Long: "responding", Short: 'r', Kind: boolean}, {Long: "list-reasons", Short: 'R', Kind: boolean},
	{Long: "summarize", Short: 's', Kind: boolean}, {Long: "sort", Short: 'S'}, {Long: "states", Short: 't'},
	{Long: "reservation", Short: 'T', Kind: boolean}, {Long: "verbose", Short: 'v', Kind: boolean},
	{Long: "version", Short: 'V', Kind: boolean}, {Long: "help", Kind: boolean}, {Long: "usage", Kind: boolean},
	{Long: "iterate", Short: 'i', Refused: refIterate},
	{Long: "clusters", Short: 'M', Refused: refCluster}, {Long: "federation", Kind: boolean, Refused: refCluster},
}

// sinfo passes through with the options of its table, each under its
// full name: what the real sinfo gets is what was checked.
func (c *Chaperon) sinfo(req Request) (Reply, error) {
	p, err := parse(sinfoFlags, req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	if len(p.rest) > 0 {
		return Reply{}, refuse("sinfo takes options only; %q is not one", p.rest[0])
	}
	var args []string
	for _, o := range p.opts {
		if o.flag.Long == "nodes" {
			if err := nodeNames(o); err != nil {
				return Reply{}, err
			}
		}
		args = append(args, o.line())
	}
	return c.real("sinfo", args...), nil
}

// noOptions refuses an option among the words after a subcommand: the
// real scontrol and sacctmgr reorder their arguments, so an option
// written there (--clusters, -u) is read as one, past the table.
func noOptions(cmd string, words []string) error {
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			return refuse("%s reads %s as an option wherever it stands; put options before the subcommand, where they are checked", cmd, w)
		}
	}
	return nil
}

// sacctmgr shows the cluster's own settings and refuses the rest: user
// and account enumeration, and every change.
func (c *Chaperon) sacctmgr(req Request) (Reply, error) {
	var args, rest []string
	for i, a := range req.Args {
		if !strings.HasPrefix(a, "-") {
			rest = req.Args[i:]
			break
		}
		switch a {
		case "-n", "--noheader", "-P", "--parsable2", "-p", "--parsable", "-Q", "--quiet":
			args = append(args, a)
		default:
			return Reply{}, refuse("sacctmgr option %s is not on stockade's allowlist", a)
		}
	}
	if len(rest) < 2 {
		return Reply{}, refuse("sacctmgr needs show|list and an entity (qos, tres, cluster)")
	}
	verb, ent := strings.ToLower(rest[0]), strings.ToLower(rest[1])
	if verb != "show" && verb != "list" {
		return Reply{}, refuse("sacctmgr %s is an administrator's command", rest[0])
	}
	switch ent {
	case "qos", "tres", "cluster", "clusters":
		if err := noOptions("sacctmgr", rest[1:]); err != nil {
			return Reply{}, err
		}
		return c.real("sacctmgr", append(append(args, verb), rest[1:]...)...), nil
	case "user", "users", "account", "accounts", "assoc", "associations", "association":
		return Reply{}, refuse("sacctmgr %s %s enumerates the cluster's users and accounts", verb, rest[1])
	}
	return Reply{}, refuse("sacctmgr %s %s is not chaperoned; stockade shows qos, tres and cluster", verb, rest[1])
}
