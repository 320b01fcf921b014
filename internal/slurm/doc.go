// Package slurm is the Slurm chaperon: it lets a sandboxed agent use a
// Slurm cluster without handing it the cluster.
//
// An agent that may run the real sbatch escapes any sandbox on the login
// node: it submits a job that reads ~/.ssh on a compute node. Under
// `stockade run --slurm` the real Slurm commands are out of the sandbox's
// reach (no munge socket, no route to slurmctld; the real programs,
// /etc/slurm and /etc/munge read empty: Hidden), and the names sbatch,
// srun, squeue, sacct, scancel, scontrol, sinfo, salloc and sacctmgr on the
// sandbox's PATH are shims: the stockade binary re-executed as the entry
// point Entry (client.go), which sends its argv, working directory and job
// script as data (a length-prefixed JSON frame, never a shell string) to
// the chaperon over a listener handed into the sandbox like the proxies
// (sandboxnet.SlurmAddr), and prints the answer with the real command's
// exit status.
//
// The chaperon runs in the supervisor, outside the sandbox:
//
//   - a submission (sbatch, srun) is checked against an allowlist of flags
//     (Flags; an administrator may add flags and exported variables in
//     /etc/stockade/config.json, and nothing a user writes widens it); the
//     working directory and every output path must be in the project; the
//     script the agent wrote is stored as submitted, in a directory of the
//     chaperon's, and the job Slurm runs is a wrapper that executes it under
//     `stockade run` with the session's policy, on the compute node;
//   - a query or a control (squeue, sacct, scontrol show job, scancel,
//     scontrol hold|release|requeue) is scoped to the jobs this session,
//     this project or this user submitted through stockade (Scope), kept in
//     a registry outside every sandbox;
//   - sinfo and scontrol show node|partition pass through; salloc, admin
//     subcommands and user enumeration are refused with a one-line reason;
//   - inside a job, on the compute node, the job's own stockade run has a
//     chaperon in step mode (Config.Step, step.go): srun starts a step of
//     that job only, with the step allowlist, its command under stockade
//     run with the job's policy; every other command is refused.
//
// Every submission, refusal and cancel is an audit event of the session.
package slurm
