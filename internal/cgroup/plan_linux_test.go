package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeV2 lays out a directory tree shaped like cgroup v2: the mount at the top
// with its cgroup.controllers, and the process's cgroup two levels down with the
// given files. This machine may have no usable cgroup v2, so the v2 decisions
// are tested on this tree; the kernel's side of v2 is not.
func fakeV2(t *testing.T, top string, files map[string]string) *hierarchy {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "user.slice", "me")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte(top+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &hierarchy{Version: 2, Mount: root, Dir: dir}
}

// v2Files returns the files of a v2 cgroup that has all three controllers,
// changed by the overrides; an empty override value removes the file.
func v2Files(overrides map[string]string) map[string]string {
	fs := map[string]string{
		"cgroup.controllers": "cpu memory pids", "cgroup.subtree_control": "cpu memory pids",
		"cgroup.procs": "", "cgroup.type": "domain",
		"memory.max": "max", "memory.swap.max": "max", "cpu.max": "max 100000", "pids.max": "max",
	}
	for k, v := range overrides {
		if v == "-" {
			delete(fs, k)
		} else {
			fs[k] = v
		}
	}
	return fs
}

func TestPlanV2(t *testing.T) {
	all := Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20}
	tests := []struct {
		name     string
		top      string
		files    map[string]string
		withV1   bool              // a v1 hierarchy exists too (hybrid)
		enable   []string          // controllers New must enable first
		problems map[string]string // limit -> phrase of its Reason
	}{
		{"delegated and enabled for children", "cpu memory pids", v2Files(nil), false, nil, nil},
		{"processes inside, not enabled", "cpu memory pids",
			v2Files(map[string]string{"cgroup.subtree_control": "", "cgroup.procs": "1234"}), false, nil,
			map[string]string{"memory": "no-internal-processes", "cpus": "no-internal-processes", "pids": "no-internal-processes"}},
		{"root cgroup, not enabled", "cpu memory pids",
			v2Files(map[string]string{"cgroup.subtree_control": "", "cgroup.procs": "1", "cgroup.type": "-"}), false,
			[]string{"memory", "cpu", "pids"}, nil},
		{"only pids delegated", "cpu memory pids",
			v2Files(map[string]string{"cgroup.controllers": "pids", "cgroup.subtree_control": "pids"}), false, nil,
			map[string]string{"memory": "not delegated", "cpus": "not delegated"}},
		{"kernel lacks controllers", "pids",
			v2Files(map[string]string{"cgroup.controllers": "pids", "cgroup.subtree_control": "pids"}), false, nil,
			map[string]string{"memory": "kernel offers no memory", "cpus": "kernel offers no cpu"}},
		{"hybrid, controllers on neither side", "",
			v2Files(map[string]string{"cgroup.controllers": "", "cgroup.subtree_control": ""}), true, nil,
			map[string]string{"memory": "in no cgroup v1 hierarchy", "cpus": "in no cgroup v1 hierarchy", "pids": "in no cgroup v1 hierarchy"}},
		{"no CFS bandwidth", "cpu memory pids", v2Files(map[string]string{"cpu.max": "-"}), false, nil,
			map[string]string{"cpus": "has no cpu.max"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay := layout{V2: fakeV2(t, tt.top, tt.files)}
			if tt.withV1 {
				lay.V1 = []hierarchy{{Version: 1, Controllers: []string{"cpuset"}, Mount: "/sys/fs/cgroup/cpuset", Dir: "/sys/fs/cgroup/cpuset"}}
			}
			ts, rep := planIn(lay, all)
			for _, p := range rep.NotEnforced {
				if want, ok := tt.problems[p.Limit]; !ok || !strings.Contains(p.Reason, want) || p.Fix == "" {
					t.Errorf("unexpected problem %s; want reason with %q", p, want)
				}
			}
			if len(rep.NotEnforced) != len(tt.problems) {
				t.Errorf("problems %v, want %v", rep.NotEnforced, tt.problems)
			}
			var enable []string
			for _, tg := range ts {
				enable = append(enable, tg.enable...)
			}
			if !slices.Equal(enable, tt.enable) {
				t.Errorf("enable %v, want %v", enable, tt.enable)
			}
		})
	}
}

// TestBuildV2 checks what New writes in cgroup v2, and in what order, on the
// fake tree with the writes recorded instead of made.
func TestBuildV2(t *testing.T) {
	h := fakeV2(t, "cpu memory pids", v2Files(map[string]string{"cgroup.subtree_control": "", "cgroup.type": "-"}))
	orig := writeFile
	t.Cleanup(func() { writeFile = orig })
	var writes []string
	writeFile = func(p, v string) error {
		if rel, err := filepath.Rel(h.Dir, p); err == nil && filepath.Base(p) != "cgroup.kill" {
			writes = append(writes, rel+" "+v)
		}
		return nil
	}
	ts, rep := planIn(layout{V2: h}, Limits{Memory: 2 << 30, CPUs: 1.5, Pids: 20})
	g, rep, err := build("stockade-x", Limits{Memory: 2 << 30, CPUs: 1.5, Pids: 20}, ts, rep)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"cgroup.subtree_control +memory +cpu +pids",
		"stockade-x/memory.max 2147483648", // the fake has no memory.swap.max in the new group
		"stockade-x/cpu.max 150000 100000",
		"stockade-x/pids.max 20",
	}
	if !slices.Equal(writes, want) {
		t.Errorf("writes\n%s\nwant\n%s", strings.Join(writes, "\n"), strings.Join(want, "\n"))
	}
	wantRep := []string{
		"memory 2.0 GiB (cgroup v2 memory; swap not capped: no memory.swap.max)",
		"cpus 1.5 (cgroup v2 cpu)",
		"pids 20 (cgroup v2 pids)",
	}
	if !slices.Equal(rep.Enforced, wantRep) || len(rep.NotEnforced) != 0 {
		t.Errorf("report %+v, want enforced %q", rep, wantRep)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.Dir, "stockade-x")); !os.IsNotExist(err) {
		t.Errorf("Close left the group directory: %v", err)
	}
}
