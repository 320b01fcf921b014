package slurm

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// sacct is stockade's own: without slurmdbd (the test cluster has
// accounting_storage/none) the real sacct has nothing to read. It shows the
// jobs in scope from what the cluster keeps without a database: the live
// record (scontrol show job) and, once a job has ended, the line jobcomp/
// filetxt wrote for it (JobCompLoc). Its default columns and layout are
// sacct's.
var sacctFlags = []Flag{
	{Long: "jobs", Short: 'j'}, {Long: "noheader", Short: 'n', Kind: boolean},
	{Long: "parsable2", Short: 'P', Kind: boolean}, {Long: "parsable", Short: 'p', Kind: boolean},
	{Long: "allocations", Short: 'X', Kind: boolean}, {Long: "format", Short: 'o'},
	{Long: "brief", Short: 'b', Kind: boolean},
	{Long: "user", Short: 'u', Refused: refOtherUsers}, {Long: "allusers", Short: 'a', Kind: boolean, Refused: refOtherUsers},
	{Long: "accounts", Short: 'A', Refused: refOtherUsers}, {Long: "clusters", Short: 'M', Refused: refCluster},
}

// sacctField is a column: its name, width, and the keys of the live
// record and of the jobcomp line that hold it.
type sacctField struct {
	name      string
	width     int
	live, log string
}

var sacctFields = []sacctField{
	{"JobID", 12, "JobId", "JobId"}, {"JobName", 10, "JobName", "Name"}, {"Partition", 10, "Partition", "Partition"},
	{"Account", 10, "Account", "Account"}, {"AllocCPUS", 10, "NumCPUs", "ProcCnt"}, {"State", 10, "JobState", "JobState"},
	{"ExitCode", 8, "ExitCode", "ExitCode"}, {"Start", 19, "StartTime", "StartTime"}, {"End", 19, "EndTime", "EndTime"},
	{"NodeList", 15, "NodeList", "NodeList"}, {"Submit", 19, "SubmitTime", "SubmitTime"}, {"WorkDir", 30, "WorkDir", "WorkDir"},
	{"Elapsed", 10, "RunTime", ""},
}

var (
	defaultSacct = []string{"JobID", "JobName", "Partition", "Account", "AllocCPUS", "State", "ExitCode"}
	briefSacct   = []string{"JobID", "State", "ExitCode"}
)

func (c *Chaperon) sacct(req Request) (Reply, error) {
	p, err := parse(sacctFlags, req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	if len(p.rest) > 0 {
		return Reply{}, refuse("sacct takes options only; %q is not one", p.rest[0])
	}
	for _, o := range p.opts {
		if o.flag.Refused != "" {
			return Reply{}, refuse("%s %s", o.given, o.flag.Refused)
		}
	}
	cols := defaultSacct
	if p.has("brief") {
		cols = briefSacct
	}
	var fields []sacctField
	if f, ok := p.value("format"); ok {
		cols = strings.Split(f, ",")
	}
	for _, name := range cols {
		k := slices.IndexFunc(sacctFields, func(f sacctField) bool { return strings.EqualFold(f.name, name) })
		if k < 0 {
			return Reply{}, refuse("sacct field %q is not one stockade's sacct knows (%s)", name, fieldNames())
		}
		fields = append(fields, sacctFields[k])
	}
	asked, _ := p.value("jobs")
	jobs, _ := c.scopedJobs(asked)
	done := c.jobcomp()
	var b strings.Builder
	sep := ""
	switch {
	case p.has("parsable2"):
		sep = "|"
	case p.has("parsable"):
		sep = "|"
	}
	row := func(vals []string) {
		for i, v := range vals {
			if sep != "" {
				b.WriteString(v)
				if i < len(vals)-1 || p.has("parsable") {
					b.WriteString(sep)
				}
				continue
			}
			w := fields[i].width
			if len(v) > w {
				v = v[:w-1] + "+"
			}
			if i == 0 {
				fmt.Fprintf(&b, "%-*s ", w, v)
			} else {
				fmt.Fprintf(&b, "%*s ", w, v)
			}
		}
		b.WriteString("\n")
	}
	if !p.has("noheader") {
		var names, dashes []string
		for _, f := range fields {
			names = append(names, f.name)
			dashes = append(dashes, strings.Repeat("-", f.width))
		}
		row(names)
		if sep == "" {
			row(dashes)
		}
	}
	for _, id := range jobs {
		// The controller's record first: a jobcomp line of the same id
		// may be an older job's (ids start again when a cluster's state
		// is reset).
		rec, live := c.liveJob(id), true
		if rec == nil {
			rec, live = done[id], false
		}
		if rec == nil {
			continue
		}
		var vals []string
		for _, f := range fields {
			key := f.log
			if live {
				key = f.live
			}
			v := rec[key]
			if f.name == "JobName" && v == "" {
				v = rec["Name"]
			}
			if f.name == "State" {
				v, _, _ = strings.Cut(v, " ")
			}
			if v == "(null)" {
				v = ""
			}
			vals = append(vals, v)
		}
		row(vals)
	}
	return Reply{Stdout: []byte(b.String())}, nil
}

func fieldNames() string {
	var n []string
	for _, f := range sacctFields {
		n = append(n, f.name)
	}
	return strings.Join(n, ",")
}

// liveJob is the controller's record of a job (scontrol show job -o).
func (c *Chaperon) liveJob(id string) map[string]string {
	r := c.real("scontrol", "--oneliner", "show", "job", id)
	if r.Code != 0 {
		return nil
	}
	return keyValues(strings.TrimSpace(string(r.Stdout)))
}

// jobcomp reads the completion records of jobcomp/filetxt, keyed by job id.
func (c *Chaperon) jobcomp() map[string]map[string]string {
	c.compOnce.Do(func() {
		r := c.real("scontrol", "show", "config")
		for _, line := range strings.Split(string(r.Stdout), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "JobCompLoc" {
				c.compLoc = strings.TrimSpace(v)
			}
		}
	})
	out := map[string]map[string]string{}
	f, err := os.Open(c.compLoc)
	if c.compLoc == "" || err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		kv := keyValues(sc.Text())
		if id := kv["JobId"]; id != "" {
			out[id] = kv
		}
	}
	return out
}

// keyValues splits Key=Value pairs separated by spaces; a value runs to
// the next " Key=".
func keyValues(s string) map[string]string {
	out := map[string]string{}
	for _, w := range strings.Split(s, " ") {
		if k, v, ok := strings.Cut(w, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}
