package slurm

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/sandbox"
)

func init() { sandbox.Entrypoints[JobEntry] = jobMain }

// jobMain runs first in a job's sandbox, on the compute node:
// `stockade JobEntry DIR OUT ERR IN MODE -- CMD ARGS...`. It opens the
// job's output, error and input here, inside the sandbox, so that a
// symlink in the project resolves in the sandbox's view and Landlock
// judges the open (Slurm itself would open them on the node, as the user,
// outside any sandbox); then it executes the command in DIR.
func jobMain() int {
	a := os.Args[2:]
	if len(a) < 7 || a[5] != "--" {
		fmt.Fprintf(os.Stderr, "stockade: %s DIR OUT ERR IN MODE -- CMD [ARGS...]\n", JobEntry)
		return 2
	}
	dir, out, errPath, in, mode, argv := a[0], expand(a[1]), expand(a[2]), a[3], a[4], a[6:]
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "slurmstepd: error: %v\n", err)
		return 1
	}
	if err := os.Chdir(dir); err != nil {
		return fail(err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if mode == "append" {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			return fail(err)
		}
		if err := unix.Dup3(int(f.Fd()), 0, 0); err != nil {
			return fail(err)
		}
	}
	if out != "" {
		f, err := os.OpenFile(out, flags, 0o644)
		if err != nil {
			return fail(err)
		}
		if err := unix.Dup3(int(f.Fd()), 1, 0); err != nil {
			return fail(err)
		}
		if errPath == "" {
			unix.Dup3(1, 2, 0)
		}
	}
	if errPath != "" {
		f, err := os.OpenFile(errPath, flags, 0o644)
		if err != nil {
			return fail(err)
		}
		if err := unix.Dup3(int(f.Fd()), 2, 0); err != nil {
			return fail(err)
		}
	}
	bin := argv[0]
	if !strings.Contains(bin, "/") {
		p, err := exec.LookPath(bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "slurmstepd: error: execve(): %s: No such file or directory\n", bin)
			return 127
		}
		bin = p
	}
	err := unix.Exec(bin, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "slurmstepd: error: execve(): %s: %v\n", argv[0], err)
	return 126
}

// expand fills in the patterns of Slurm's file names that the job's
// variables answer.
func expand(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	vars := map[byte]string{
		'j': os.Getenv("SLURM_JOB_ID"), 'x': os.Getenv("SLURM_JOB_NAME"), 'u': os.Getenv("USER"),
		'N': os.Getenv("SLURMD_NODENAME"), 't': os.Getenv("SLURM_PROCID"), 'n': os.Getenv("SLURM_NODEID"),
		's': os.Getenv("SLURM_STEP_ID"), 'A': os.Getenv("SLURM_ARRAY_JOB_ID"), 'a': os.Getenv("SLURM_ARRAY_TASK_ID"),
		'%': "%",
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+1 < len(p) {
			if v, ok := vars[p[i+1]]; ok {
				b.WriteString(v)
				i++
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
