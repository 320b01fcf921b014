package cgroup

import (
	"fmt"
	"math"
	"strconv"
)

// Limits are the resource limits requested for one sandbox. A zero field means
// the limit was not requested.
type Limits struct {
	Memory int64   // bytes
	CPUs   float64 // cores: 1.5 is one and a half
	Pids   int64   // tasks (processes and threads)
}

// Problem is one requested limit that is not enforced.
type Problem struct {
	Limit  string // "memory", "cpus" or "pids", as in the flag name
	Reason string // what stands in the way, with the path where there is one
	Fix    string // what the user can do about it
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s; fix: %s", p.Limit, p.Reason, p.Fix)
}

// Report says which requested limits are (or, from Probe, would be) enforced.
type Report struct {
	Enforced    []string  // "memory 64 MiB (cgroup v1 memory)"
	NotEnforced []Problem // one per requested limit not in Enforced
}

// Requirement is a limit set on purpose (a flag, a variable, a config
// file): unlike a default, it must be enforced, or the sandbox does not start.
type Requirement struct {
	Limit  string `json:"limit"`  // "memory", "cpus" or "pids"
	Source string `json:"source"` // where it was set: "flag --memory"
	Undo   string `json:"undo"`   // how to drop it: "drop --memory"
}

// Refusal is the one-line error that stops a start when rep has a limit of
// reqs among those it cannot enforce, or nil when it has none.
func (rep Report) Refusal(reqs []Requirement) error {
	for _, p := range rep.NotEnforced {
		for _, r := range reqs {
			if r.Limit == p.Limit {
				return fmt.Errorf("%s: the %s limit cannot be enforced: %s; fix: %s, or %s", r.Source, p.Limit, p.Reason, p.Fix, r.Undo)
			}
		}
	}
	return nil
}

// Bounds of the limits; see the package documentation for why.
const (
	MinMemory = 1 << 20
	MinCPUs   = 0.01 // 1 ms per 100 ms period: the kernel's smallest CFS quota
	MaxCPUs   = 1 << 16
	MinPids   = 2       // the sandbox init and the agent
	MaxPids   = 4194304 // PID_MAX_LIMIT; pids.max refuses more
)

// cpuPeriod is the CFS period in µs; the quota is CPUs × cpuPeriod.
const cpuPeriod = 100000

// fileSpec is one control file written for a limit.
type fileSpec struct {
	Name  string
	Value func(Limits) string
	// Optional files are written only where the kernel has them; IfMissing is
	// then appended to the report line, since the limit is weaker without it.
	Optional  bool
	IfMissing string
}

// limitSpec says how one limit is enforced with one cgroup version.
type limitSpec struct {
	Limit      string // flag name
	Controller string
	Version    int
	Files      []fileSpec // written in this order
}

// specs is every way a limit is written. Order matters within Files: v1 refuses
// memory.memsw.limit_in_bytes below memory.limit_in_bytes, and the CFS period is
// set before the quota that is relative to it.
var specs = []limitSpec{
	{"memory", "memory", 1, []fileSpec{
		{Name: "memory.limit_in_bytes", Value: memoryValue},
		{Name: "memory.memsw.limit_in_bytes", Value: memoryValue, Optional: true,
			IfMissing: "swap not capped: no memory.memsw.limit_in_bytes (boot with swapaccount=1)"},
	}},
	{"memory", "memory", 2, []fileSpec{
		{Name: "memory.max", Value: memoryValue},
		{Name: "memory.swap.max", Value: func(Limits) string { return "0" }, Optional: true,
			IfMissing: "swap not capped: no memory.swap.max"},
	}},
	{"cpus", "cpu", 1, []fileSpec{
		{Name: "cpu.cfs_period_us", Value: func(Limits) string { return strconv.Itoa(cpuPeriod) }},
		{Name: "cpu.cfs_quota_us", Value: func(l Limits) string { return strconv.FormatInt(cpuQuota(l.CPUs), 10) }},
	}},
	{"cpus", "cpu", 2, []fileSpec{
		{Name: "cpu.max", Value: func(l Limits) string { return fmt.Sprintf("%d %d", cpuQuota(l.CPUs), cpuPeriod) }},
	}},
	{"pids", "pids", 1, []fileSpec{{Name: "pids.max", Value: pidsValue}}},
	{"pids", "pids", 2, []fileSpec{{Name: "pids.max", Value: pidsValue}}},
}

func memoryValue(l Limits) string { return strconv.FormatInt(l.Memory, 10) }
func pidsValue(l Limits) string   { return strconv.FormatInt(l.Pids, 10) }
func cpuQuota(cpus float64) int64 { return int64(math.Round(cpus * cpuPeriod)) }

// spec returns how limit is written with cgroup version v.
func spec(limit string, v int) limitSpec {
	for _, s := range specs {
		if s.Limit == limit && s.Version == v {
			return s
		}
	}
	panic("cgroup: no spec for " + limit) // specs_test checks every pair exists
}

// request is one limit that was asked for.
type request struct {
	Limit      string
	Controller string
	Shown      string // the value for humans: "2.0 GiB", "0.5", "20"
}

// requests lists the requested limits, in flag order.
func (l Limits) requests() []request {
	var rs []request
	if l.Memory != 0 {
		rs = append(rs, request{"memory", "memory", FormatSize(l.Memory)})
	}
	if l.CPUs != 0 {
		rs = append(rs, request{"cpus", "cpu", strconv.FormatFloat(l.CPUs, 'f', -1, 64)})
	}
	if l.Pids != 0 {
		rs = append(rs, request{"pids", "pids", strconv.FormatInt(l.Pids, 10)})
	}
	return rs
}

// Validate checks the requested limits against their bounds. It depends on
// nothing but l, so a policy validates the same on every machine.
func (l Limits) Validate() []Problem {
	var ps []Problem
	switch {
	case l.Memory < 0:
		ps = append(ps, Problem{"memory", fmt.Sprintf("memory limit %d is negative", l.Memory),
			"give --memory in bytes, at least 1 MiB"})
	case l.Memory > 0 && l.Memory < MinMemory:
		ps = append(ps, Problem{"memory", fmt.Sprintf("memory limit %s is below the minimum of 1 MiB", FormatSize(l.Memory)),
			"give --memory of at least 1 MiB"})
	}
	switch {
	case math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) || l.CPUs < 0:
		ps = append(ps, Problem{"cpus", fmt.Sprintf("cpus limit %v is not a positive number", l.CPUs),
			"give --cpus as a number of cores, like 0.5 or 2"})
	case l.CPUs > 0 && l.CPUs < MinCPUs:
		ps = append(ps, Problem{"cpus", fmt.Sprintf("cpus limit %v is below the minimum of %v (1 ms of CPU time per 100 ms)", l.CPUs, MinCPUs),
			fmt.Sprintf("give --cpus of at least %v", MinCPUs)})
	case l.CPUs > MaxCPUs:
		ps = append(ps, Problem{"cpus", fmt.Sprintf("cpus limit %v is above the maximum of %d", l.CPUs, MaxCPUs),
			"give a smaller --cpus, or none for no limit"})
	}
	switch {
	case l.Pids < 0:
		ps = append(ps, Problem{"pids", fmt.Sprintf("pids limit %d is negative", l.Pids),
			fmt.Sprintf("give --pids of at least %d", MinPids)})
	case l.Pids > 0 && l.Pids < MinPids:
		ps = append(ps, Problem{"pids", fmt.Sprintf("pids limit %d leaves no room for the sandbox init and the agent", l.Pids),
			fmt.Sprintf("give --pids of at least %d", MinPids)})
	case l.Pids > MaxPids:
		ps = append(ps, Problem{"pids", fmt.Sprintf("pids limit %d is above the kernel's maximum of %d", l.Pids, MaxPids),
			"give a smaller --pids, or none for no limit"})
	}
	return ps
}

// invalid reports whether ps holds a problem for limit.
func invalid(ps []Problem, limit string) bool {
	for _, p := range ps {
		if p.Limit == limit {
			return true
		}
	}
	return false
}

// FormatSize formats a byte count for humans: "512 B", "64 MiB", "1.5 MiB",
// "2.0 GiB". KiB and MiB are whole numbers when exact; GiB and up always have
// one decimal, so a glance tells the two ranges apart.
func FormatSize(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1<<10 && n > -1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	i, u := 0, int64(1<<10)
	for i+1 < len(units) && (n >= u<<10 || n <= -u<<10) {
		i, u = i+1, u<<10
	}
	if i < 2 && n%u == 0 {
		return fmt.Sprintf("%d %s", n/u, units[i])
	}
	return fmt.Sprintf("%.1f %s", float64(n)/float64(u), units[i])
}

// notEnforced is the report for when nothing can be enforced for one reason.
func notEnforced(l Limits, reason, fix string) Report {
	rep := Report{NotEnforced: l.Validate()}
	for _, r := range l.requests() {
		if !invalid(rep.NotEnforced, r.Limit) {
			rep.NotEnforced = append(rep.NotEnforced, Problem{r.Limit, reason, fix})
		}
	}
	return rep
}
