package cgroup

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1 << 10, "1 KiB"},
		{1536, "1.5 KiB"},
		{512 << 10, "512 KiB"},
		{1 << 20, "1 MiB"},
		{64 << 20, "64 MiB"},
		{512 << 20, "512 MiB"},
		{3 << 19, "1.5 MiB"},
		{1 << 30, "1.0 GiB"},
		{2 << 30, "2.0 GiB"},
		{3 << 29, "1.5 GiB"},
		{1 << 40, "1.0 TiB"},
		{math.MaxInt64, "8.0 EiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		want map[string]string // limit -> a phrase its Reason must contain; nil: valid
	}{
		{"none", Limits{}, nil},
		{"all valid", Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20}, nil},
		{"smallest", Limits{Memory: MinMemory, CPUs: MinCPUs, Pids: MinPids}, nil},
		{"largest", Limits{Memory: math.MaxInt64, CPUs: MaxCPUs, Pids: MaxPids}, nil},
		{"memory negative", Limits{Memory: -1}, map[string]string{"memory": "negative"}},
		{"memory small", Limits{Memory: 512 << 10}, map[string]string{"memory": "512 KiB is below the minimum of 1 MiB"}},
		{"cpus negative", Limits{CPUs: -1}, map[string]string{"cpus": "not a positive number"}},
		{"cpus NaN", Limits{CPUs: math.NaN()}, map[string]string{"cpus": "not a positive number"}},
		{"cpus Inf", Limits{CPUs: math.Inf(1)}, map[string]string{"cpus": "not a positive number"}},
		{"cpus small", Limits{CPUs: 0.001}, map[string]string{"cpus": "below the minimum of 0.01"}},
		{"cpus large", Limits{CPUs: MaxCPUs + 1}, map[string]string{"cpus": "above the maximum"}},
		{"pids negative", Limits{Pids: -3}, map[string]string{"pids": "negative"}},
		{"pids one", Limits{Pids: 1}, map[string]string{"pids": "no room for the sandbox init"}},
		{"pids large", Limits{Pids: MaxPids + 1}, map[string]string{"pids": "above the kernel's maximum"}},
		{"all bad", Limits{Memory: 1, CPUs: -1, Pids: 1}, map[string]string{"memory": "below", "cpus": "positive", "pids": "room"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := tt.l.Validate()
			if len(ps) != len(tt.want) {
				t.Fatalf("Validate() = %v, want problems for %v", ps, tt.want)
			}
			for _, p := range ps {
				if !strings.Contains(p.Reason, tt.want[p.Limit]) || p.Fix == "" {
					t.Errorf("problem %v: want a reason containing %q and a fix", p, tt.want[p.Limit])
				}
			}
		})
	}
}

// TestSpecs checks the table of control files: every limit has a way for each
// cgroup version, files belong to the limit's controller, and values are what
// the kernel parses.
func TestSpecs(t *testing.T) {
	l := Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20}
	values := map[string]*regexp.Regexp{
		"memory.limit_in_bytes": regexp.MustCompile(`^67108864$`), "memory.memsw.limit_in_bytes": regexp.MustCompile(`^67108864$`),
		"memory.max": regexp.MustCompile(`^67108864$`), "memory.swap.max": regexp.MustCompile(`^0$`),
		"cpu.cfs_period_us": regexp.MustCompile(`^100000$`), "cpu.cfs_quota_us": regexp.MustCompile(`^50000$`),
		"cpu.max": regexp.MustCompile(`^50000 100000$`), "pids.max": regexp.MustCompile(`^20$`),
	}
	for _, r := range l.requests() {
		for _, v := range []int{1, 2} {
			s := spec(r.Limit, v)
			if s.Controller != r.Controller || len(s.Files) == 0 || s.Files[0].Optional {
				t.Errorf("%s v%d: controller %q, files %v: want controller %q and a required first file", r.Limit, v, s.Controller, s.Files, r.Controller)
			}
			for _, f := range s.Files {
				if !strings.HasPrefix(f.Name, s.Controller+".") {
					t.Errorf("%s v%d: file %s is not the %s controller's", r.Limit, v, f.Name, s.Controller)
				}
				if f.Optional != (f.IfMissing != "") {
					t.Errorf("%s v%d: file %s: optional files, and only they, say what is lost without them", r.Limit, v, f.Name)
				}
				if re := values[f.Name]; re == nil || !re.MatchString(f.Value(l)) {
					t.Errorf("%s v%d: %s = %q, want it to match %v", r.Limit, v, f.Name, f.Value(l), re)
				}
			}
		}
	}
	if n := len(specs); n != 6 {
		t.Errorf("len(specs) = %d, want 3 limits × 2 versions", n)
	}
}

func TestRequests(t *testing.T) {
	got := Limits{Memory: 2 << 30, CPUs: 1.5, Pids: 100}.requests()
	want := []request{{"memory", "memory", "2.0 GiB"}, {"cpus", "cpu", "1.5"}, {"pids", "pids", "100"}}
	if len(got) != len(want) {
		t.Fatalf("requests() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("requests()[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if rs := (Limits{}).requests(); len(rs) != 0 {
		t.Errorf("no limits: requests() = %v, want none", rs)
	}
}

func TestNotEnforced(t *testing.T) {
	rep := notEnforced(Limits{Memory: 1, CPUs: 2, Pids: 50}, "cgroups are Linux-only", "use Linux")
	want := []string{
		"memory: memory limit 1 B is below the minimum of 1 MiB; fix: give --memory of at least 1 MiB",
		"cpus: cgroups are Linux-only; fix: use Linux",
		"pids: cgroups are Linux-only; fix: use Linux",
	}
	if len(rep.Enforced) != 0 || len(rep.NotEnforced) != len(want) {
		t.Fatalf("report %+v, want %d problems and nothing enforced", rep, len(want))
	}
	for i, p := range rep.NotEnforced {
		if p.String() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, p.String(), want[i])
		}
	}
}

// TestRefusal: a limit set on purpose that is not enforced refuses the start
// in one line naming where it was set and both fixes; defaults do not.
func TestRefusal(t *testing.T) {
	rep := Report{Enforced: []string{"pids 20 (cgroup v1 pids)"}, NotEnforced: []Problem{
		{"memory", "cgroup v1 memory hierarchy at /sys/fs/cgroup/memory is not writable by uid 1000", "run as root"},
		{"cpus", "no cpu controller", "use another kernel"},
	}}
	memory := Requirement{"memory", "flag --memory", "drop --memory"}
	cpus := Requirement{"cpus", "/home/u/.config/stockade/config.json", `remove "cpus" from /home/u/.config/stockade/config.json`}
	pids := Requirement{"pids", "env STOCKADE_PIDS", "unset STOCKADE_PIDS"}
	tests := []struct {
		name    string
		reqs    []Requirement
		wantErr string // "" for none
	}{
		{"nothing required", nil, ""},
		{"required and enforced", []Requirement{pids}, ""},
		{"memory required", []Requirement{pids, memory},
			"flag --memory: the memory limit cannot be enforced: cgroup v1 memory hierarchy at /sys/fs/cgroup/memory is not writable by uid 1000; fix: run as root, or drop --memory"},
		{"first unenforced wins", []Requirement{cpus, memory}, "flag --memory: the memory limit"},
		{"cpus from a file", []Requirement{cpus}, `/home/u/.config/stockade/config.json: the cpus limit cannot be enforced: no cpu controller; fix: use another kernel, or remove "cpus" from`},
	}
	for _, tt := range tests {
		err := rep.Refusal(tt.reqs)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Refusal = %v, want none", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: Refusal = %v, want one line starting %q", tt.name, err, tt.wantErr)
		}
	}
}
