package cgroup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// fixDelegate is the way out when the process may not create cgroups.
const fixDelegate = "run as root, or use a cgroup v2 system with a delegated subtree (systemd-run --user --scope -p Delegate=yes ...)"

// item is one limit to write in a target.
type item struct {
	req  request
	spec limitSpec
}

// line is the report line for it; has says whether an optional file exists.
func (it item) line(has func(file string) bool) string {
	note := ""
	for _, f := range it.spec.Files {
		if f.Optional && !has(f.Name) {
			note += "; " + f.IfMissing
		}
	}
	return fmt.Sprintf("%s %s (cgroup v%d %s%s)", it.req.Limit, it.req.Shown, it.spec.Version, it.req.Controller, note)
}

// target is one hierarchy the sandbox group is created in.
type target struct {
	h      *hierarchy
	enable []string // v2 controllers to enable in h.Dir/cgroup.subtree_control first
	items  []item
}

// problems reports every limit of t as not enforced.
func (t *target) problems(reason, fix string) []Problem {
	var ps []Problem
	for _, it := range t.items {
		ps = append(ps, Problem{it.req.Limit, reason, fix})
	}
	return ps
}

// detect reads where the process sits in every mounted cgroup hierarchy.
func detect() (layout, error) {
	mounts, err := parseFile("/proc/self/mountinfo", parseMountinfo)
	if err != nil {
		return layout{}, err
	}
	procs, err := parseFile("/proc/self/cgroup", parseProcCgroup)
	if err != nil {
		return layout{}, err
	}
	return resolve(mounts, procs), nil
}

func parseFile[T any](name string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(name)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return parse(f)
}

// plan decides, without changing anything, where each requested limit would be
// written, and reports the ones that cannot be.
func plan(l Limits) ([]*target, Report) {
	if len(l.requests()) == 0 {
		// Nothing to place, so no need to read the mount table: the
		// default run of a user other than root asks for no cgroup at all.
		return planIn(layout{}, l)
	}
	lay, err := detect()
	if err != nil {
		return nil, notEnforced(l, fmt.Sprintf("cannot tell which cgroups this process is in: %v", err), "mount /proc")
	}
	return planIn(lay, l)
}

// planIn is plan for a given layout.
func planIn(lay layout, l Limits) ([]*target, Report) {
	rep := Report{NotEnforced: l.Validate()}
	var ts []*target
	for _, r := range l.requests() {
		if invalid(rep.NotEnforced, r.Limit) {
			continue
		}
		h := lay.find(r.Controller)
		enable, p := check(h, r, lay)
		if p != nil {
			rep.NotEnforced = append(rep.NotEnforced, *p)
			continue
		}
		i := slices.IndexFunc(ts, func(t *target) bool { return t.h == h })
		if i < 0 {
			i = len(ts)
			ts = append(ts, &target{h: h})
		}
		ts[i].items = append(ts[i].items, item{r, spec(r.Limit, h.Version)})
		if enable {
			ts[i].enable = append(ts[i].enable, r.Controller)
		}
	}
	return ts, rep
}

// check says whether limit r can be enforced in h, and whether its controller
// must first be enabled for the children of h.Dir (v2 only).
func check(h *hierarchy, r request, lay layout) (enable bool, p *Problem) {
	problem := func(format string, args ...any) *Problem {
		return &Problem{r.Limit, fmt.Sprintf(format, args...), fixDelegate}
	}
	switch {
	case h == nil:
		return false, &Problem{r.Limit, fmt.Sprintf("no mounted cgroup hierarchy has the %s controller", r.Controller),
			"mount cgroup2 on /sys/fs/cgroup with a kernel that has the " + r.Controller + " controller"}
	case h.Lost != "":
		return false, &Problem{r.Limit, h.Lost, "run stockade where its own cgroup is mounted (the host, or a container with its own cgroup namespace)"}
	case h.Version == 1:
		if err := accessible(h.Dir, unix.W_OK|unix.X_OK); err != nil {
			return false, problem("cgroup v1 %s hierarchy at %s %s", r.Controller, h.Dir, notWritable(err))
		}
		return false, missingFile(h, r)
	}

	avail, err := readWords(filepath.Join(h.Dir, "cgroup.controllers"))
	if err != nil {
		return false, problem("cannot read the cgroup v2 controllers: %v", err)
	}
	if !slices.Contains(avail, r.Controller) {
		return false, unavailable(h, r, lay)
	}
	if err := accessible(h.Dir, unix.W_OK|unix.X_OK); err != nil {
		return false, problem("cgroup v2 group %s %s", h.Dir, notWritable(err))
	}
	// Moving the sandbox init needs write access to cgroup.procs of the
	// common ancestor of where it is and where it goes: h.Dir.
	if err := accessible(filepath.Join(h.Dir, "cgroup.procs"), unix.W_OK); err != nil {
		return false, problem("%s/cgroup.procs %s", h.Dir, notWritable(err))
	}
	if p := missingFile(h, r); p != nil {
		return false, p
	}
	sub, err := readWords(filepath.Join(h.Dir, "cgroup.subtree_control"))
	if err != nil {
		return false, problem("cannot read the cgroup v2 controllers enabled for children: %v", err)
	}
	if slices.Contains(sub, r.Controller) {
		return false, nil
	}
	if busy, err := hasOwnProcesses(h.Dir); err != nil || busy {
		return false, &Problem{r.Limit, fmt.Sprintf("the %s controller is not enabled in %s/cgroup.subtree_control, and cgroup v2 "+
			"will not enable it while that group has processes of its own (the no-internal-processes rule)", r.Controller, h.Dir),
			fmt.Sprintf("start stockade as root from the root cgroup (echo $$ > %s/cgroup.procs), or from a group "+
				"whose cgroup.subtree_control already enables %s; stockade does not move itself", h.Mount, r.Controller)}
	}
	if err := accessible(filepath.Join(h.Dir, "cgroup.subtree_control"), unix.W_OK); err != nil {
		return false, problem("%s/cgroup.subtree_control %s, so the %s controller cannot be enabled for the sandbox", h.Dir, notWritable(err), r.Controller)
	}
	return true, nil
}

// unavailable explains why cgroup v2 at h lacks r's controller.
func unavailable(h *hierarchy, r request, lay layout) *Problem {
	top, _ := readWords(filepath.Join(h.Mount, "cgroup.controllers"))
	switch {
	case slices.Contains(top, r.Controller):
		return &Problem{r.Limit, fmt.Sprintf("the %s controller is not delegated to this process's cgroup %s (not in its cgroup.controllers)",
			r.Controller, h.Dir), "start stockade in a cgroup with the controller delegated (systemd-run --user --scope -p Delegate=yes ...)"}
	case len(lay.V1) > 0:
		return &Problem{r.Limit, fmt.Sprintf("the %s controller is in no cgroup v1 hierarchy and not in cgroup v2 at %s",
			r.Controller, h.Mount), "use a kernel with the " + r.Controller + " controller and mount it (or boot with systemd.unified_cgroup_hierarchy=1)"}
	}
	return &Problem{r.Limit, fmt.Sprintf("the kernel offers no %s controller in cgroup v2 at %s", r.Controller, h.Mount),
		"use a kernel with the " + r.Controller + " controller"}
}

// missingFile reports a required control file missing from h.Dir, as when the
// kernel lacks CFS bandwidth control. The top group has fewer files, so it is
// not checked; New then fails on the write and rolls back.
func missingFile(h *hierarchy, r request) *Problem {
	if h.IsTop() {
		return nil
	}
	for _, f := range spec(r.Limit, h.Version).Files {
		if _, err := os.Stat(filepath.Join(h.Dir, f.Name)); !f.Optional && errors.Is(err, os.ErrNotExist) {
			return &Problem{r.Limit, fmt.Sprintf("the cgroup v%d %s controller at %s has no %s", h.Version, r.Controller, h.Dir, f.Name),
				"use a kernel that provides " + f.Name}
		}
	}
	return nil
}

// hasOwnProcesses reports whether the cgroup at dir holds processes and is not
// the root cgroup, which alone is exempt from the no-internal-processes rule.
// Only non-root cgroups have a cgroup.type file.
func hasOwnProcesses(dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.type")); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	pids, err := readWords(filepath.Join(dir, "cgroup.procs"))
	return len(pids) > 0, err
}

// accessible checks access for the effective uid, as mkdir and open will.
func accessible(path string, mode uint32) error {
	return unix.Faccessat(unix.AT_FDCWD, path, mode, unix.AT_EACCESS)
}

func notWritable(err error) string {
	switch {
	case errors.Is(err, unix.EROFS):
		return "is mounted read-only"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Sprintf("is not writable by uid %d", os.Geteuid())
	}
	return fmt.Sprintf("cannot be checked for writing (%v)", err)
}

func readWords(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	return strings.Fields(string(b)), err
}
