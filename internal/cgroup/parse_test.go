package cgroup

import (
	"strconv"
	"strings"
	"testing"
)

// Samples of /proc/self/mountinfo (cgroup lines and a few others) and
// /proc/self/cgroup from the three layouts.
const (
	hybridMountinfo = `22 1 253:0 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	hybridCgroup = `9:name=systemd:/
8:pids:/
4:memory:/process_api/316689e7f026c5a2e3514adda5770a37
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
`
	v1Mountinfo = `25 21 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd
29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
31 25 0:28 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
`
	v1Cgroup = `11:pids:/user.slice/user-1000.slice/session-2.scope
4:memory:/user.slice/user-1000.slice/session-2.scope
3:cpu,cpuacct:/user.slice
1:name=systemd:/user.slice/user-1000.slice/session-2.scope
`
	v2Mountinfo = `35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	v2Cgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n"

	// A container without a cgroup namespace: the host's /docker/abc is
	// bind-mounted at the usual places, and /proc/self/cgroup shows host paths.
	dockerV1Mountinfo = `1234 1230 0:27 /docker/abc /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,memory
1235 1230 0:28 /docker/abc /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,pids
`
	dockerV1Cgroup = `5:memory:/docker/abc/sub
4:pids:/elsewhere
`
	escapedMountinfo = `50 1 0:40 / /mnt/my\040cgroups rw - cgroup2 none rw
`
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // "TYPE ROOT POINT SUPER"
		wantErr  string
	}{
		{"hybrid", hybridMountinfo, []string{
			"cgroup / /sys/fs/cgroup/cpu rw,cpu", "cgroup / /sys/fs/cgroup/cpuacct rw,cpuacct",
			"cgroup / /sys/fs/cgroup/cpuset rw,cpuset", "cgroup / /sys/fs/cgroup/memory rw,memory",
			"cgroup / /sys/fs/cgroup/pids rw,pids", "cgroup / /sys/fs/cgroup/systemd rw,name=systemd",
			"cgroup2 / /sys/fs/cgroup/unified rw"}, ""},
		{"v1", v1Mountinfo, []string{
			"cgroup / /sys/fs/cgroup/systemd rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd",
			"cgroup / /sys/fs/cgroup/cpu,cpuacct rw,cpu,cpuacct", "cgroup / /sys/fs/cgroup/memory rw,memory",
			"cgroup / /sys/fs/cgroup/pids rw,pids"}, ""},
		{"v2", v2Mountinfo, []string{"cgroup2 / /sys/fs/cgroup rw,nsdelegate,memory_recursiveprot"}, ""},
		{"docker", dockerV1Mountinfo, []string{
			"cgroup /docker/abc /sys/fs/cgroup/memory rw,memory", "cgroup /docker/abc /sys/fs/cgroup/pids rw,pids"}, ""},
		{"escaped", escapedMountinfo, []string{"cgroup2 / /mnt/my cgroups rw"}, ""},
		{"empty", "", nil, ""},
		{"no separator", "1 2 0:3 / /x rw cgroup cgroup rw\n", nil, "line 1"},
		{"short", "1 2 0:3 / /x - cgroup2\n", nil, "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := parseMountinfo(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, strings.Join([]string{m.Type, m.Root, m.Point, strings.Join(m.Super, ",")}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // "ID CONTROLLERS PATH"
		wantErr  bool
	}{
		{"hybrid", hybridCgroup, []string{"9 name=systemd /", "8 pids /", "4 memory /process_api/316689e7f026c5a2e3514adda5770a37",
			"3 cpuset /", "2 cpuacct /", "1 cpu /", "0  /"}, false},
		{"v1 comounted", v1Cgroup, []string{"11 pids /user.slice/user-1000.slice/session-2.scope",
			"4 memory /user.slice/user-1000.slice/session-2.scope", "3 cpu,cpuacct /user.slice",
			"1 name=systemd /user.slice/user-1000.slice/session-2.scope"}, false},
		{"v2", v2Cgroup, []string{"0  /user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"}, false},
		{"colon in path", "0::/a:b\n", []string{"0  /a:b"}, false},
		{"no fields", "garbage\n", nil, true},
		{"bad id", "x::/\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := parseProcCgroup(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			var got []string
			for _, e := range es {
				got = append(got, strings.Join([]string{strconv.Itoa(e.ID), strings.Join(e.Controllers, ","), e.Path}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestResolve checks which hierarchy and directory each controller gets.
func TestResolve(t *testing.T) {
	type where struct {
		version int
		dir     string
		lost    bool
	}
	none := where{}
	tests := []struct {
		name                     string
		mountinfo, cgroup        string
		memory, cpu, pids, other where // other: a controller mounted nowhere ("rdma")
	}{
		{"hybrid", hybridMountinfo, hybridCgroup,
			where{1, "/sys/fs/cgroup/memory/process_api/316689e7f026c5a2e3514adda5770a37", false},
			where{1, "/sys/fs/cgroup/cpu", false}, where{1, "/sys/fs/cgroup/pids", false},
			where{2, "/sys/fs/cgroup/unified", false}},
		{"v1 comounted", v1Mountinfo, v1Cgroup,
			where{1, "/sys/fs/cgroup/memory/user.slice/user-1000.slice/session-2.scope", false},
			where{1, "/sys/fs/cgroup/cpu,cpuacct/user.slice", false},
			where{1, "/sys/fs/cgroup/pids/user.slice/user-1000.slice/session-2.scope", false}, none},
		{"v2", v2Mountinfo, v2Cgroup,
			where{2, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope", false},
			where{2, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope", false},
			where{2, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope", false},
			where{2, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope", false}},
		{"docker bind mount", dockerV1Mountinfo, dockerV1Cgroup,
			where{1, "/sys/fs/cgroup/memory/sub", false}, none, where{1, "", true}, none},
		{"v2 outside namespace root", v2Mountinfo, "0::/../sibling\n",
			where{2, "", true}, where{2, "", true}, where{2, "", true}, where{2, "", true}},
		{"nothing mounted", "", hybridCgroup, none, none, none, none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := parseMountinfo(strings.NewReader(tt.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			ps, err := parseProcCgroup(strings.NewReader(tt.cgroup))
			if err != nil {
				t.Fatal(err)
			}
			lay := resolve(ms, ps)
			for c, want := range map[string]where{"memory": tt.memory, "cpu": tt.cpu, "pids": tt.pids, "rdma": tt.other} {
				h := lay.find(c)
				got := none
				if h != nil {
					got = where{h.Version, h.Dir, h.Lost != ""}
				}
				if got != want {
					t.Errorf("%s: got %+v, want %+v", c, got, want)
				}
			}
		})
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		root, p, want string
		ok            bool
	}{
		{"/", "/", "/", true},
		{"/", "/a/b", "/a/b", true},
		{"/", "/../x", "", false},
		{"/docker/abc", "/docker/abc", "/", true},
		{"/docker/abc", "/docker/abc/x", "/x", true},
		{"/docker/abc", "/docker/abcd", "", false},
		{"/docker/abc", "/", "", false},
	}
	for _, tt := range tests {
		got, ok := within(tt.root, tt.p)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("within(%q, %q) = %q, %v; want %q, %v", tt.root, tt.p, got, ok, tt.want, tt.ok)
		}
	}
}
