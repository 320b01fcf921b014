// Package cgroup enforces a sandbox's resource limits with the Linux control
// groups the machine offers, and says plainly which limits it cannot enforce.
//
// Three limits exist, each optional (zero means "not requested"):
//
//	--memory BYTES  memory.max (v2) or memory.limit_in_bytes (v1); at least 1 MiB.
//	                Swap is closed too: memory.swap.max = 0 (v2), or
//	                memory.memsw.limit_in_bytes = the same value (v1), when the
//	                kernel has those files. A process that goes over is OOM-killed.
//	--cpus FLOAT    CFS bandwidth: quota = CPUs × 100000 µs per 100000 µs period,
//	                cpu.max (v2) or cpu.cfs_quota_us + cpu.cfs_period_us (v1);
//	                0.01 to 65536.
//	--pids N        pids.max (v1 and v2); 2 (the sandbox init and the agent) to
//	                4194304. fork and clone fail with EAGAIN at the limit.
//
// Use it in three steps:
//
//	rep := cgroup.Probe(limits)                     // doctor, policy show: nothing is created
//	g, rep, err := cgroup.New("stockade-"+id, limits) // creates and writes the groups
//	err = g.Add(initPid)                            // before the sandbox init execs anything
//	defer g.Close()                                 // kills what is left, removes the groups
//
// Report.Enforced holds one human line per limit in force ("memory 2.0 GiB
// (cgroup v1 memory)"); Report.NotEnforced holds a Problem with the reason and the
// fix for each requested limit that is not. New returns an error only when it had
// to roll back a half-made group, and it has done so before returning. Whether a
// limit that is not enforced stops the start is the caller's choice: Refusal
// turns the problem of a Requirement (a limit set on purpose) into that error.
//
// Where groups go. The package reads /proc/self/mountinfo and /proc/self/cgroup
// and never assumes a path. For each controller it uses the v1 hierarchy that
// holds it, if any, otherwise the cgroup2 hierarchy; the hybrid layout (v1
// controllers under /sys/fs/cgroup/<controller>, an empty cgroup2 at
// /sys/fs/cgroup/unified) and pure v1 and pure v2 are all handled. The sandbox
// group is created as a child of the process's own cgroup in that hierarchy.
//
// Limitations:
//   - cgroup v1 is writable only by root (or where an administrator chowned the
//     process's cgroup directory); an unprivileged user gets a NotEnforced report.
//   - cgroup v2 allows child groups to use a controller only when it is enabled in
//     the parent's cgroup.subtree_control, which the kernel refuses for a non-root
//     group that holds processes (the "no internal processes" rule). The package
//     never moves the calling process, so on pure v2 it enforces limits only when
//     the controllers are already enabled for children of the process's cgroup or
//     that cgroup is the root one; otherwise the limit is reported NotEnforced.
//   - A controller enabled by New in the root cgroup's subtree_control stays
//     enabled: other groups may rely on it by then.
//   - Close kills with cgroup.kill (v2, Linux 5.14+) or by SIGKILLing the pids in
//     cgroup.procs until none remain, for at most a few seconds.
//
// Everything here is Linux-only; elsewhere Probe and New report every requested
// limit as NotEnforced ("cgroups are Linux-only").
package cgroup
