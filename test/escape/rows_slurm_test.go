package escape

import (
	"os"
	"path/filepath"
	"time"
)

// slurmRows: the Slurm chaperon (--slurm, package slurm). Without it the
// sandbox has no way to the cluster (no munge socket, no chaperon); with
// it, the chaperon refuses what would take a job out of the sandbox,
// before any Slurm command runs, so these rows need no cluster
// (test/slurm runs jobs on one).
var slurmRows = []row{
	{name: "slurm_no_chaperon_without_flag", args: probe("connect-tcp", "127.0.0.1:6820"), want: "DENIED ECONNREFUSED"},
	// The real sbatch inside finds no controller: the name does not
	// resolve through the DNS stub, and the floor refuses the host's own
	// addresses (it retries for about 10 s before it gives up).
	{name: "slurm_real_sbatch", timeout: 60 * time.Second,
		args: sh(`if [ -x /usr/bin/sbatch ]; then /usr/bin/sbatch --wrap true >/dev/null 2>&1 && echo OK || echo DENIED failed; else echo DENIED absent; fi`),
		want: "DENIED failed"},
	{name: "slurm_munge_socket", args: sh(`[ -e /run/munge/munge.socket.2 ] && echo OK || echo DENIED absent`), want: "DENIED absent"},
	// With --slurm the real Slurm commands, the cluster's configuration
	// and the munge key are not there either: each reads empty (a mask),
	// and the Slurm commands resolve to the shims, which reach the
	// chaperon. (An unlistable /etc/munge is not absent: the row wants
	// the mask.)
	{name: "slurm_real_sbatch_hidden", flags: []string{"--slurm"},
		args: sh(`for c in /usr/bin/sbatch /usr/bin/srun /usr/bin/squeue /usr/bin/sacct /usr/bin/scancel /usr/bin/scontrol /usr/bin/sinfo /usr/bin/salloc /usr/bin/sacctmgr /usr/bin/sbcast /usr/bin/sattach /usr/sbin/slurmd /usr/sbin/slurmstepd /usr/sbin/slurmctld /usr/sbin/mungekey; do if [ -x $c ] || [ -s $c ]; then echo "OK $c is there"; exit; fi; done; for d in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/aarch64-linux-gnu/slurm-wlm; do [ -n "$(ls -A $d 2>/dev/null)" ] && { echo "OK $d is there"; exit; }; done; echo DENIED absent`),
		want: "DENIED absent"},
	{name: "slurm_etc_slurm_hidden", flags: []string{"--slurm"},
		args: sh(`if out=$(ls -A /etc/slurm 2>&1); then [ -z "$out" ] && echo DENIED absent || echo "OK $out" | head -n1; else echo "OK unlistable: $out"; fi`),
		want: "DENIED absent"},
	{name: "slurm_etc_munge_hidden", flags: []string{"--slurm"},
		args: sh(`if out=$(ls -A /etc/munge 2>&1); then [ -z "$out" ] && echo DENIED absent || echo "OK $out" | head -n1; else echo "OK unlistable: $out"; fi`),
		want: "DENIED absent"},
	{name: "slurm_commands_are_shims", flags: []string{"--slurm"},
		args: sh(`for c in sbatch srun squeue sacct scancel scontrol sinfo salloc sacctmgr; do case "$(command -v $c)" in */stockade/slurm/bin/$c) ;; *) echo "DENIED $c is $(command -v $c)"; exit ;; esac; done; echo OK`),
		want: "OK"},
	// The chaperon writes each job's wrapper in its directory, and the
	// wrapper runs on the node outside any sandbox: a --slurm sandbox
	// that could write there is refused before anything is made.
	{name: "slurm_state_in_rw_tree", flags: []string{"--slurm", "--rw", "{home}/.local/state"},
		setup: func(fx *fixture) error { return fx.writeFile("home/.local/state/keep", "", 0o644) },
		args:  sh(`echo OK`), want: "REFUSED", refused: "--slurm: the chaperon's directory", refusedExit: 2},
	// The chaperon runs the real Slurm commands on the host: one the
	// sandbox planted on the user's PATH (a directory in the project, as
	// a venv's bin, written in an earlier session) is passed over, never
	// run there.
	{name: "slurm_planted_command_on_path", flags: []string{"--slurm"}, env: []string{"PATH={work}/bin:/usr/local/bin:/usr/bin:/bin"},
		setup: func(fx *fixture) error { return fx.writeFile("work/bin/sinfo", "#!/bin/sh\necho PLANTED-RAN\n", 0o755) },
		args:  sh(`out=$(sinfo 2>&1); case "$out" in *PLANTED-RAN*) echo "OK the planted sinfo ran on the host" ;; *) echo DENIED passed over ;; esac`),
		want:  "DENIED passed over"},
	// A session whose tree holds the chaperon's directory (here a --rw of
	// the state directory, without --slurm) sees it empty and cannot
	// write there: another session's registry and job directories, which
	// the jobs' runs on the nodes trust, stay out of its reach.
	{name: "slurm_state_masked_in_rw_tree", flags: []string{"--rw", "{home}/.local/state"},
		setup: func(fx *fixture) error {
			return fx.writeFile("home/.local/state/stockade/slurm/jobs/s1-1/keep", "x", 0o600)
		},
		args: sh(`d={home}/.local/state/stockade/slurm; if [ -n "$(ls -A $d 2>/dev/null)" ]; then echo "OK $(ls -A $d)"; elif mkdir $d/jobs 2>/dev/null || touch $d/x 2>/dev/null; then echo OK writable; else echo DENIED masked; fi`),
		want: "DENIED masked"},
	// A link planted among the chaperon's directories by an earlier
	// sandbox that could write the state directory: --slurm is refused.
	{name: "slurm_state_link_planted", flags: []string{"--slurm"},
		setup: func(fx *fixture) error {
			if err := os.MkdirAll(filepath.Join(fx.home, ".local/state/stockade"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(fx.work, "x"), filepath.Join(fx.home, ".local/state/stockade/slurm"))
		},
		args: sh(`echo OK`), want: "REFUSED", refused: "is a symbolic link", refusedExit: 2},
	{name: "slurm_state_tree_inside", flags: []string{"--rw", "{home}/.local/state/stockade/slurm/jobs"},
		setup: func(fx *fixture) error {
			return fx.writeFile("home/.local/state/stockade/slurm/jobs/s1-1/keep", "x", 0o600)
		},
		args: sh(`echo OK`), want: "REFUSED", refused: "where stockade keeps its sessions' records"},
	{name: "slurm_submit_as_other_uid", flags: []string{"--slurm"}, args: sh(slurmRefused(`sbatch --uid=0 --wrap true`)), want: "DENIED refused"},
	{name: "slurm_submit_prolog", flags: []string{"--slurm"}, args: sh(slurmRefused(`srun --prolog=/tmp/p true`)), want: "DENIED refused"},
	{name: "slurm_submit_get_user_env", flags: []string{"--slurm"}, args: sh(slurmRefused(`sbatch --get-user-env --wrap true`)), want: "DENIED refused"},
	{name: "slurm_output_outside_project", flags: []string{"--slurm"}, args: sh(slurmRefused(`sbatch -o {home}/.bashrc --wrap true`)), want: "DENIED refused"},
	{name: "slurm_chdir_outside_project", flags: []string{"--slurm"}, args: sh(slurmRefused(`sbatch -D / --wrap true`)), want: "DENIED refused"},
	{name: "slurm_directive_uid", flags: []string{"--slurm"},
		setup: func(fx *fixture) error { return fx.writeFile("work/j.sh", "#!/bin/sh\n#SBATCH --uid=0\ntrue\n", 0o644) },
		args:  sh(slurmRefused(`sbatch j.sh`)), want: "DENIED refused"},
	{name: "slurm_abbreviated_flag", flags: []string{"--slurm"}, args: sh(slurmRefused(`sbatch --ui=0 --wrap true`)), want: "DENIED refused"},
	{name: "slurm_cancel_foreign_job", flags: []string{"--slurm"}, args: sh(slurmRefused(`scancel 1`)), want: "DENIED refused"},
	{name: "slurm_enumerate_users", flags: []string{"--slurm"}, args: sh(slurmRefused(`sacctmgr show user`)), want: "DENIED refused"},
	// sinfo passes through, but its options are read with a table: a
	// refused one glued to its value, or behind another, is refused too.
	{name: "slurm_sinfo_other_cluster", flags: []string{"--slurm"}, args: sh(slurmRefused(`sinfo -Mother`)), want: "DENIED refused"},
	{name: "slurm_sinfo_iterate_bundled", flags: []string{"--slurm"}, args: sh(slurmRefused(`sinfo -hi5`)), want: "DENIED refused"},
	// srun and sbatch read a node list with a / as a file, on the host:
	// a user's file, or /dev/zero, which never ends.
	{name: "slurm_nodelist_file", flags: []string{"--slurm"}, args: sh(slurmRefused(`srun -w /dev/zero true`)), want: "DENIED refused"},
	{name: "slurm_exclude_file", flags: []string{"--slurm"}, args: sh(slurmRefused(`sbatch -x {home}/.ssh/id_rsa --wrap true`)), want: "DENIED refused"},
	// srun splits its command line at a bare ":" into components of a
	// heterogeneous job: the second one's command would run with no
	// stockade run in front of it.
	{name: "slurm_srun_het_component", flags: []string{"--slurm"}, args: sh(slurmRefused(`srun -n1 true : -n1 /bin/sh -c id`)), want: "DENIED refused"},
	{name: "slurm_step_het_component", flags: slurmStep, env: []string{"SLURM_JOB_ID=1"}, args: sh(slurmRefused(`srun true : /bin/sh -c id`)), want: "DENIED refused"},
	// A job list that the real scontrol splits at a space: the session's
	// own job first, then one outside the scope (job 1 here: whether it
	// exists or not, the chaperon must not pass the list on).
	{name: "slurm_scope_job_list_space", flags: []string{"--slurm"}, timeout: 60 * time.Second,
		args: sh(`a=$(sbatch --parsable -H -p debug -t 1 --wrap true 2>&1) || { echo "OK sbatch failed: $a"; exit; }; ` + slurmRefused(`scontrol release "$a+0 1"`) + `; scancel "$a" >/dev/null 2>&1`),
		want: "DENIED refused"},
	{name: "slurm_salloc", flags: []string{"--slurm"}, args: sh(slurmRefused(`salloc`)), want: "DENIED refused"},
	// Inside a job (the job's wrapper runs `stockade run --slurm
	// --slurm-step` with slurmd's SLURM_JOB_ID), srun starts steps of this
	// job only: never of another job, never a new allocation, and nothing
	// else is answered.
	{name: "slurm_step_other_job", flags: slurmStep, env: []string{"SLURM_JOB_ID=1"}, args: sh(slurmRefused(`srun --jobid=2 true`)), want: "DENIED refused"},
	{name: "slurm_step_new_allocation", flags: slurmStep, env: []string{"SLURM_JOB_ID=1"}, args: sh(slurmRefused(`srun -p debug -t 5 true`)), want: "DENIED refused"},
	{name: "slurm_step_pty", flags: slurmStep, env: []string{"SLURM_JOB_ID=1"}, args: sh(slurmRefused(`srun --pty true`)), want: "DENIED refused"},
	{name: "slurm_step_sbatch", flags: slurmStep, env: []string{"SLURM_JOB_ID=1"}, args: sh(slurmRefused(`sbatch --wrap true`)), want: "DENIED refused"},
	{name: "slurm_step_cancel", flags: slurmStep, env: []string{"SLURM_JOB_ID=1"}, args: sh(slurmRefused(`scancel 2`)), want: "DENIED refused"},
}

// slurmStep are the flags of a job's sandbox on the compute node.
var slurmStep = []string{"--slurm", "--slurm-step"}

// slurmRefused prints "DENIED refused" when the chaperon refuses cmd, and OK
// with what it said otherwise.
func slurmRefused(cmd string) string {
	return `out=$(` + cmd + ` 2>&1); case "$out" in *"refused by stockade"*) echo "DENIED refused" ;; *) echo "OK $out" | head -n1 ;; esac`
}
