package slurm

import "sync"

// hiddenCommands are the host's Slurm and munge programs: the client
// commands (slurm-client), the daemons (slurm-wlm, slurmdbd) and munge's
// own. Inside a --slurm sandbox the shims are the Slurm commands; the
// real ones would talk to the cluster past the chaperon if the sandbox
// ever reached it, and read the cluster's configuration as they start.
var hiddenCommands = []string{
	"sacct", "sacctmgr", "salloc", "sattach", "sbatch", "sbcast", "scancel", "scontrol", "scrontab",
	"sdiag", "sh5util", "sinfo", "sprio", "squeue", "sreport", "srun", "sshare", "sstat", "strigger",
	"slurmctld", "slurmd", "slurmdbd", "slurmstepd", "slurmrestd", "sackd", "scrun",
	// Debian installs the daemons under these names, behind links in
	// /etc/alternatives (a link is not masked; its target is).
	"slurmctld-wlm", "slurmd-wlm", "slurmdbd-wlm", "slurmstepd-wlm",
	"munge", "unmunge", "remunge", "munged", "mungekey",
}

// hiddenLibs are Slurm's plugin directories: what its programs load.
var hiddenLibs = []string{"/usr/lib/slurm", "/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
	"/usr/lib/x86_64-linux-gnu/slurm", "/usr/lib/aarch64-linux-gnu/slurm", "/usr/local/lib/slurm"}

// hiddenDirs are where packages and local installs put them.
var hiddenDirs = []string{"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}

// Hidden are the paths of the system trees a --slurm sandbox sees empty
// (mount.Config.SystemHide): the cluster's configuration, the munge key,
// and the real Slurm and munge programs, so that in the sandbox the
// Slurm commands are the shims and nothing else. The munge socket and
// Slurm's spool are under /run and /var, which are the sandbox's own
// tmpfs already. A path the host lacks is left out of the plan.
var Hidden = sync.OnceValue(func() []string {
	out := append([]string{"/etc/slurm", "/etc/slurm-llnl", "/etc/munge"}, hiddenLibs...)
	for _, d := range hiddenDirs {
		for _, c := range hiddenCommands {
			out = append(out, d+"/"+c)
		}
	}
	return out
})
