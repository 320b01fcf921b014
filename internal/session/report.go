package session

import (
	"fmt"
	"strings"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/gitguard"
	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/tripwire"
)

// Reporter turns what a run reports (a restore, a finding, the git check,
// a tampered path) into audit events. A session's supervisor and the
// foreground `stockade run` both report through one, each with its own
// Event: the supervisor's audit log, the foreground run's log (Record).
type Reporter struct {
	Event func(source, event string, fields map[string]any)
}

func (r Reporter) log(event string, fields map[string]any) {
	r.Event(audit.SourceSupervisor, event, fields)
}

// Warn records a warning.
func (r Reporter) Warn(format string, args ...any) {
	r.log(audit.EventWarning, map[string]any{"message": fmt.Sprintf(format, args...)})
}

// Finding records what a check at the end of a run found.
func (r Reporter) Finding(f job.Finding) {
	r.log(audit.EventFinding, map[string]any{"kind": f.Kind, "path": f.Path, "rule": f.Rule, "moved_to": f.MovedTo, "detail": f.Detail})
}

// Restored records what the snapshot restore put back after a run.
func (r Reporter) Restored(changes []tripwire.Change, err error) {
	for _, c := range changes {
		r.Tamper(c, "restored")
	}
	if err != nil {
		r.Warn("tripwire restore incomplete: %v", err)
	}
}

// Tamper records a change to a protected path, and what was done about it.
func (r Reporter) Tamper(c tripwire.Change, action string) {
	r.Event(audit.SourceTripwire, audit.EventTamper, map[string]any{"path": c.Path, "op": c.Kind, "detail": c.Detail, "action": action})
}

// GitChecked records what gitguard moved aside after a run.
func (r Reporter) GitChecked(found []gitguard.Finding, err error) {
	for _, f := range found {
		r.log(audit.EventTamper, map[string]any{"path": f.Path, "op": "git metadata: " + f.What + " (" + f.Why + ")",
			"action": strings.ToLower(f.Verdict()) + ": " + f.Action()})
	}
	if err != nil {
		r.Warn("git metadata not checked: %v", err)
	}
}

// RestoredLines are the lines a run's report has for what the snapshot
// restore put back: the foreground run prints them as warnings, an
// attached session's client once the session has ended.
func RestoredLines(changes []tripwire.Change, err error) []string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("TAMPER: %s was %s during the run; restored (%s)", c.Path, c.Kind, c.Detail))
	}
	if err != nil {
		out = append(out, fmt.Sprintf("tripwire restore incomplete: %v", err))
	}
	return out
}

// GitLines are the lines a run's report has for the git check after it.
func GitLines(found []gitguard.Finding, err error) []string {
	var out []string
	for _, f := range found {
		out = append(out, f.String())
	}
	if err != nil {
		out = append(out, fmt.Sprintf("NOT CHECKED: the git metadata of the workdir: %v; review .git and nested repositories before you run git there", err))
	}
	return out
}

// Guide is how the start event records the guide an agent was given: by
// its hash and where it is, not its text (it is the same pages at every
// start, and `stockade policy show` or the file itself has them).
type Guide struct {
	SHA256 string `json:"sha256"`
	// Where: the file under the sandbox HOME ("~/.codex/AGENTS.md"), or
	// the argument that carries it ("argument --append-system-prompt").
	Where string `json:"where"`
}

// startFields are the fields of the start event of cfg's run.
func startFields(cfg Config) map[string]any {
	loosened := cfg.Loosened
	if loosened == nil {
		loosened = []string{}
	}
	p := cfg.Job.Policy
	f := map[string]any{
		"command": cfg.command(), "workdir": p.Workdir, "loosened": loosened,
		"policy": map[string]any{
			"enforcement": cfg.Enforcement, "network": p.Network, "ro": p.RO, "rw": p.RW,
			"memory": p.Memory, "cpus": p.CPUs, "pids": p.Pids, "tripwire": cfg.Tripwire,
			"terminal": p.Terminal,
		},
	}
	if cfg.Agent != "" {
		f["agent"] = cfg.Agent
	}
	if cfg.Guide != nil {
		f["guide"] = map[string]any{"sha256": cfg.Guide.SHA256, "where": cfg.Guide.Where}
	}
	if cfg.Foreground {
		f["foreground"] = true
	}
	return f
}

// command is the run's command as the user gave it: for an agent, its
// name and the user's arguments, not the resolved binary and the guide.
func (c Config) command() []string {
	if c.Command != nil {
		return c.Command
	}
	return c.Job.Argv
}
