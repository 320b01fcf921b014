package escape

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// limitsRows: a project's .stockade.json is the repository's, so the
// attacker's: it may set only inert variables and only lower limits
// (docs/sandbox.md, "Choices, and why"). The writable tmpfs mounts are bounded
// (docs/sandbox.md, "Resource limits"): their pages belong to no process, so
// without a size the OOM killer would kill host processes for them. A limit
// set on purpose that cannot be enforced refuses the start (the same
// section): the unprivileged user of the battery has no delegated cgroup.
var limitsRows = []row{
	{name: "project_env_node_options", setup: project(`{"env": ["NODE_OPTIONS=--require=/tmp/evil.js"]}`),
		args: probe("getenv", "NODE_OPTIONS"), want: refused, refused: `"env": "NODE_OPTIONS" is not allowed`},
	{name: "project_env_ld_preload", setup: project(`{"env": ["LD_PRELOAD={work}/evil.so"]}`),
		args: probe("getenv", "LD_PRELOAD"), want: refused, refused: `"env": "LD_PRELOAD" is not allowed`},
	{name: "project_env_https_proxy", setup: project(`{"env": ["https_proxy=http://198.51.100.1:3128"]}`),
		args: probe("getenv", "https_proxy"), want: refused, refused: `"env": "https_proxy" is not allowed`},
	// REDIS_URL holds a password and does not look like a credential.
	{name: "project_env_pass_redis_url", setup: project(`{"env": ["REDIS_URL"]}`),
		args: probe("getenv", "REDIS_URL"), want: refused, refused: `"env": "REDIS_URL" is not allowed`},
	{name: "project_pids_raised", setup: project(`{"pids": 90000}`),
		args: sh("grep processes /proc/self/limits"), want: refused, refused: `"pids": 90000 is not allowed`},
	{name: "project_memory_raised", setup: project(`{"memory": "64g"}`),
		args: sh("df -k /tmp | tail -1"), want: refused, refused: `"memory": 64.0 GiB is not allowed`},
	// What a project may do: set an inert variable, lower a limit.
	{name: "work_project_tightens", setup: project(`{"env": ["TZ=UTC"], "pids": 100}`),
		args: sh("echo $TZ"), want: "UTC"},

	// Each writable tmpfs has a size, together within the default budget
	// (half of the default memory limit), and the kernel refuses to go past it.
	{name: "tmpfs_default_budget", args: probe("tmpfs-budget", fmt.Sprint(4<<30), "/tmp", "/var/tmp", "/run", "/dev/shm"),
		want: "DENIED ENOSPC"},
	// Filled for real under a small --memory: /tmp, then /dev/shm, /run and
	// /var/tmp, 32 MiB in all. The user cannot have --memory here (below).
	{name: "tmpfs_fill_small_memory", flags: []string{"--memory", "64m"},
		args: probe("fill", fmt.Sprint(32<<20), "/tmp", "/dev/shm", "/run", "/var/tmp"),
		want: "DENIED ENOSPC", refusedUser: "flag --memory: the memory limit cannot be enforced"},
	// Set on purpose and not enforceable: refused, with the fix, not warned.
	{name: "limits_explicit_memory", flags: []string{"--memory", "1g"}, args: sh("echo ran"),
		want: "ran", refusedUser: "or drop --memory"},
	{name: "limits_explicit_cpus", flags: []string{"--cpus", "1"}, args: sh("echo ran"),
		want: "ran", refusedUser: "or drop --cpus"},

	// The kernel counts inotify instances per user and charges a user
	// namespace's count to its parents: a sandbox without limits of its own
	// takes the user's whole quota (issue 10 §4). It gets a quarter of the
	// user's limit, and cannot raise it (no capability, /proc/sys read-only).
	{name: "inotify_instances_user_quota", args: probe("inotify-instances", fmt.Sprint(userLimit("max_inotify_instances")/4)),
		want: "DENIED EMFILE"},
	{name: "inotify_watches_user_quota", args: sh("cat /proc/sys/user/max_inotify_watches"),
		want: fmt.Sprint(userLimit("max_inotify_watches") / 4)},
	{name: "user_namespaces_user_quota", args: sh("cat /proc/sys/user/max_user_namespaces"), want: "0"},
}

// userLimit is the host's /proc/sys/user limit name (the user's quota): the
// battery runs as root and as the test user, whose limits are the same.
func userLimit(name string) int {
	b, err := os.ReadFile("/proc/sys/user/" + name)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// refused is the want of a row whose start must be refused for every runner.
const refused = "(refused)"

// project writes the project's .stockade.json ({work} is the workdir).
func project(content string) func(fx *fixture) error {
	return func(fx *fixture) error {
		return fx.writeFile("work/.stockade.json", fx.expand([]string{content})[0], 0o644)
	}
}
