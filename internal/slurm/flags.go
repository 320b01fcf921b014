package slurm

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// kind says how the chaperon checks a flag's value.
type kind int

const (
	plain    kind = iota // any value, passed on
	boolean              // no value
	optional             // --flag or --flag=VALUE
	path                 // a file in the project, opened inside the job's sandbox
	dir                  // a directory in the project
	export               // --export: ALL, NONE, or NAME=VALUE of allowed names
	wrap                 // --wrap: the script, run under stockade run
)

// Flag is one option of a submission command.
type Flag struct {
	Long  string
	Short byte
	Kind  kind
	// Refused, when set, is why the flag is never passed on; the
	// administrator's allowlist cannot lift it.
	Refused string
}

// Refusals: what each refused flag would do, said once for every command.
const (
	refUser      = "runs the job as another user or group"
	refEnv       = "loads the user's login environment, with its credentials, into the job"
	refHook      = "runs a program on the node outside the sandbox"
	refPty       = "gives the job a terminal outside the sandbox"
	refX11       = "forwards the display out of the sandbox"
	refContainer = "runs the job in a container outside stockade's sandbox"
	refMail      = "sends mail from the cluster, past the sandbox's egress policy"
	refCluster   = "sends the job to another cluster, whose nodes the session's policy does not describe"
	refStage     = "copies files onto the nodes outside the sandbox"
	refStep      = "joins another allocation from outside it; call srun in the job's script for a step of it"
	refMulti     = "runs programs named in a file, which the chaperon cannot put under stockade run"
	refNoAlloc   = "runs without an allocation, as Slurm's own user"
	refReboot    = "reboots the nodes"
	refPropagate = "carries the submitting shell's resource limits onto the node"
	refAlloc     = "sets a property of an allocation; inside a job, srun starts steps of this job only"
	refOtherJob  = "names a job; inside a job, srun starts steps of this job only, never of another"
)

// common are the flags sbatch and srun share.
var common = []Flag{
	{Long: "job-name", Short: 'J'}, {Long: "partition", Short: 'p'}, {Long: "time", Short: 't'},
	{Long: "time-min"}, {Long: "nodes", Short: 'N'}, {Long: "ntasks", Short: 'n'},
	{Long: "ntasks-per-node"}, {Long: "ntasks-per-core"}, {Long: "ntasks-per-socket"},
	{Long: "cpus-per-task", Short: 'c'}, {Long: "mincpus"}, {Long: "threads-per-core"},
	{Long: "mem"}, {Long: "mem-per-cpu"}, {Long: "mem-per-gpu"}, {Long: "tmp"},
	{Long: "gres"}, {Long: "gpus", Short: 'G'}, {Long: "gpus-per-node"}, {Long: "gpus-per-task"},
	{Long: "cpus-per-gpu"}, {Long: "constraint", Short: 'C'}, {Long: "exclusive", Kind: optional},
	{Long: "oversubscribe", Short: 's', Kind: boolean}, {Long: "contiguous", Kind: boolean},
	{Long: "distribution", Short: 'm'}, {Long: "hint"}, {Long: "begin", Short: 'b'},
	{Long: "deadline"}, {Long: "nice", Kind: optional}, {Long: "qos", Short: 'q'},
	{Long: "comment"}, {Long: "dependency", Short: 'd'}, {Long: "quiet", Short: 'Q', Kind: boolean},
	{Long: "verbose", Short: 'v', Kind: boolean}, {Long: "overcommit", Short: 'O', Kind: boolean},
	{Long: "spread-job", Kind: boolean}, {Long: "exclude", Short: 'x'}, {Long: "nodelist", Short: 'w'},
	{Long: "output", Short: 'o', Kind: path}, {Long: "error", Short: 'e', Kind: path},
	{Long: "input", Short: 'i', Kind: path}, {Long: "chdir", Short: 'D', Kind: dir},
	{Long: "export", Kind: export},
	{Long: "account", Short: 'A', Refused: "charges an account the administrator has not allowed; /etc/stockade/config.json may allow it"},

	{Long: "uid", Refused: refUser}, {Long: "gid", Refused: refUser},
	{Long: "get-user-env", Kind: optional, Refused: refEnv}, {Long: "export-file", Refused: refEnv},
	{Long: "prolog", Refused: refHook}, {Long: "epilog", Refused: refHook},
	{Long: "task-prolog", Refused: refHook}, {Long: "task-epilog", Refused: refHook},
	{Long: "pty", Kind: boolean, Refused: refPty}, {Long: "x11", Kind: optional, Refused: refX11},
	{Long: "container", Refused: refContainer}, {Long: "container-id", Refused: refContainer},
	{Long: "mail-type", Refused: refMail}, {Long: "mail-user", Refused: refMail},
	{Long: "clusters", Short: 'M', Refused: refCluster}, {Long: "cluster-constraint", Refused: refCluster},
	{Long: "bb", Refused: refStage}, {Long: "bbf", Refused: refStage}, {Long: "bcast", Kind: optional, Refused: refStage},
	{Long: "reboot", Kind: boolean, Refused: refReboot}, {Long: "propagate", Kind: optional, Refused: refPropagate},
}

// sbatchFlags and srunFlags are the submission flags stockade knows:
// passed on, checked, or refused with a reason. Anything else is refused
// as not on the allowlist. (Built at first use, not at every start.)
var (
	sbatchFlags = sync.OnceValue(func() []Flag {
		return append(slices.Clone(common),
			Flag{Long: "wrap", Kind: wrap}, Flag{Long: "array", Short: 'a'},
			Flag{Long: "hold", Short: 'H', Kind: boolean}, Flag{Long: "parsable", Kind: boolean},
			Flag{Long: "wait", Short: 'W', Kind: boolean}, Flag{Long: "test-only", Kind: boolean},
			Flag{Long: "requeue", Kind: boolean}, Flag{Long: "no-requeue", Kind: boolean},
			Flag{Long: "open-mode"}, Flag{Long: "signal"}, Flag{Long: "ignore-pbs", Kind: boolean},
		)
	})
	srunFlags = sync.OnceValue(func() []Flag {
		return append(slices.Clone(common),
			Flag{Long: "label", Short: 'l', Kind: boolean}, Flag{Long: "unbuffered", Short: 'u', Kind: boolean},
			Flag{Long: "mpi"}, Flag{Long: "cpu-bind"}, Flag{Long: "mem-bind"}, Flag{Long: "overlap", Kind: boolean},
			Flag{Long: "exact", Kind: boolean}, Flag{Long: "kill-on-bad-exit", Short: 'K', Kind: optional},
			Flag{Long: "relative", Short: 'r'},
			Flag{Long: "jobid", Refused: refStep}, Flag{Long: "multi-prog", Refused: refMulti},
			Flag{Long: "no-allocate", Short: 'Z', Kind: boolean, Refused: refNoAlloc},
		)
	})
)

// stepFlags are the flags of srun inside a job (step mode): the step's
// shape (tasks, nodes of the allocation, CPUs, memory, GPUs), its output
// and its environment. A flag that would shape a new allocation, or name
// another job, is refused with its reason, and so is every flag srun
// refuses in allocation mode. The administrator's additions do not apply:
// they widen submissions, and a step is not one.
var stepFlags = sync.OnceValue(func() []Flag {
	step := []string{
		"ntasks", "nodes", "cpus-per-task", "ntasks-per-node", "ntasks-per-core", "ntasks-per-socket",
		"threads-per-core", "mem", "mem-per-cpu", "mem-per-gpu", "gres", "gpus", "gpus-per-node",
		"gpus-per-task", "cpus-per-gpu", "distribution", "hint", "nodelist", "exclude", "job-name",
		"time", "quiet", "verbose", "overcommit", "output", "error", "input", "chdir", "export",
		"label", "unbuffered", "mpi", "cpu-bind", "mem-bind", "overlap", "exact", "kill-on-bad-exit",
		"relative",
	}
	var t []Flag
	for _, f := range srunFlags() {
		switch {
		case f.Long == "jobid":
			f.Refused = refOtherJob
		case f.Refused == "" && !slices.Contains(step, f.Long):
			f.Refused = refAlloc
		case f.Long == "account":
			f.Refused = refAlloc // not the administrator's to allow here
		}
		t = append(t, f)
	}
	return t
})

// opt is one option as given, under its long name.
type opt struct {
	flag  Flag
	value string
	given string // as the agent wrote it, for messages
}

// parsed is a command line: the options in order, then the rest (sbatch:
// the script and its arguments; srun: the command).
type parsed struct {
	opts []opt
	rest []string
}

func (p parsed) has(long string) bool {
	return slices.ContainsFunc(p.opts, func(o opt) bool { return o.flag.Long == long })
}

func (p parsed) value(long string) (string, bool) {
	v, ok := "", false
	for _, o := range p.opts {
		if o.flag.Long == long {
			v, ok = o.value, true // the last one wins, as in Slurm
		}
	}
	return v, ok
}

// unknownFlag is a flag that is not in the table at all.
type unknownFlag struct{ given string }

func (e unknownFlag) Error() string {
	return fmt.Sprintf("option %s is not on stockade's Slurm allowlist", e.given)
}

// parse splits args into options and the rest, the way getopt does for
// Slurm, except that a long option must be written in full: an
// abbreviation is refused, not guessed (the chaperon passes every option
// on under its full name, so what Slurm sees is what was checked).
func parse(table []Flag, args []string) (parsed, error) {
	var p parsed
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			p.rest = args[i+1:]
			return p, nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			p.rest = args[i:]
			return p, nil
		}
		var f Flag
		var value string
		hasValue := false
		if strings.HasPrefix(a, "--") {
			name, v, eq := strings.Cut(a[2:], "=")
			k := slices.IndexFunc(table, func(f Flag) bool { return f.Long == name })
			if k < 0 {
				return p, unknownFlag{"--" + name}
			}
			f, value, hasValue = table[k], v, eq
		} else {
			k := slices.IndexFunc(table, func(f Flag) bool { return f.Short != 0 && f.Short == a[1] })
			if k < 0 {
				return p, unknownFlag{a[:2]}
			}
			f = table[k]
			if len(a) > 2 {
				if f.Kind == boolean {
					return p, fmt.Errorf("option %s: write each short option separately (-%c -%s)", a, a[1], a[2:])
				}
				value, hasValue = a[2:], true
			}
		}
		given := a
		if f.Refused != "" {
			// Before its value is taken: a refused flag never decides
			// what the rest of the line means.
			return p, refusal{given + " " + f.Refused}
		}
		switch f.Kind {
		case boolean:
			if hasValue {
				return p, fmt.Errorf("option --%s takes no value", f.Long)
			}
		case optional:
		default:
			if !hasValue {
				if i+1 >= len(args) {
					return p, fmt.Errorf("option --%s needs a value", f.Long)
				}
				i++
				value = args[i]
			}
		}
		p.opts = append(p.opts, opt{flag: f, value: value, given: given})
	}
	return p, nil
}

// line is an option as the chaperon passes it on: under its full name.
func (o opt) line() string {
	switch {
	case o.flag.Kind == boolean:
		return "--" + o.flag.Long
	case o.flag.Kind == optional && o.value == "":
		return "--" + o.flag.Long
	}
	return "--" + o.flag.Long + "=" + o.value
}

// directives are the #SBATCH lines at the top of a batch script, split
// into words as sbatch splits them (white space, with quotes kept
// together); Slurm never sees the agent's script, so the chaperon reads
// and checks them.
func directives(script []byte) ([]string, error) {
	var words []string
	lines := strings.Split(string(script), "\n")
	for n, line := range lines {
		if n == 0 && strings.HasPrefix(line, "#!") {
			continue
		}
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") && !strings.HasPrefix(line, "#SBATCH") {
			continue
		}
		if !strings.HasPrefix(line, "#SBATCH") {
			break // the first command ends the directives
		}
		rest := line[len("#SBATCH"):]
		if c, _, ok := strings.Cut(rest, " #"); ok {
			rest = c
		}
		w, err := split(rest)
		if err != nil {
			return nil, fmt.Errorf("script line %d: %w", n+1, err)
		}
		words = append(words, w...)
	}
	return words, nil
}

// split splits s at white space outside quotes.
func split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\r':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote in #SBATCH %s", s)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
