package slurm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/sandbox"
)

func init() {
	sandbox.Entrypoints[JobEntry] = jobMain
	sandbox.Entrypoints[WrapEntry] = wrapMain
}

// wrapMain is what Slurm starts on the compute node for a job or a step
// (WrapEntry), as the user, outside any sandbox: it writes the job's id
// for an srun's registry and points its own messages at the job's log,
// each a new file opened following no link, then executes `stockade run`
// with the job's policy and SLURM_* variables (wrapArgv).
func wrapMain() int {
	log, idFile, argv, err := wrapArgv(os.Args[2:], os.Environ())
	if err != nil {
		fmt.Fprintf(os.Stderr, "stockade: %v\n", err)
		return 2
	}
	id := os.Getenv("SLURM_JOB_ID")
	if !isJobID(id) {
		id = ""
	}
	create := func(p string) (int, error) {
		return unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	}
	if log != "" && id != "" {
		if fd, err := create(strings.ReplaceAll(log, "%j", id)); err == nil {
			unix.Dup3(fd, 1, 0)
			unix.Dup3(fd, 2, 0)
			unix.Close(fd)
		}
	}
	// The job's directory is mounted into the job's sandbox read-only:
	// it must still be the directory the chaperon made, at its canonical
	// path (Config.State is canonical), not a link another session's
	// sandbox put in its path since.
	if idFile != "" {
		if err := checkJobDir(filepath.Dir(idFile)); err != nil {
			fmt.Fprintf(os.Stderr, "stockade: %v; not starting the job\n", err)
			return 1
		}
	}
	if idFile != "" && id != "" {
		if fd, err := create(idFile); err == nil {
			unix.Write(fd, []byte(id+"\n"))
			unix.Close(fd)
		}
	}
	err = unix.Exec("/proc/self/exe", append([]string{os.Args[0]}, argv...), os.Environ())
	fmt.Fprintf(os.Stderr, "stockade: %s: executing stockade run: %v\n", WrapEntry, err)
	return 126
}

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

// checkJobDir checks that dir, a job's directory, is reached through no
// link: Config.State is canonical, so any link in its path was put there
// since the chaperon made it.
func checkJobDir(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err == nil && real != dir {
		err = fmt.Errorf("a link in its path leads to %s", real)
	}
	if err != nil {
		return fmt.Errorf("the job's directory %s is not the one the chaperon made: %w", dir, err)
	}
	return nil
}
