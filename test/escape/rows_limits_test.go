package escape

import "fmt"

// limitsRows: a project's .stockade.json is the repository's, so the
// attacker's: it may set only inert variables and only lower limits (issue 9
// §6). The writable tmpfs mounts are bounded (§7): their pages belong to no
// process, so without a size the OOM killer would kill host processes for
// them. A limit set on purpose that cannot be enforced refuses the start
// (§10): the unprivileged user of the battery has no delegated cgroup.
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
}

// refused is the want of a row whose start must be refused for every runner.
const refused = "(refused)"

// project writes the project's .stockade.json ({work} is the workdir).
func project(content string) func(fx *fixture) error {
	return func(fx *fixture) error {
		return fx.writeFile("work/.stockade.json", fx.expand([]string{content})[0], 0o644)
	}
}
