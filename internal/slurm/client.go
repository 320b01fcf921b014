package slurm

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/stockade-dev/stockade/internal/sandbox"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Entry is the entry point the shims re-execute stockade as: a shim is a
// script whose first line is `#!STOCKADE Entry`, so the kernel runs
// `STOCKADE Entry SHIM ARGS...`, and the shim's file name is the command.
const Entry = "__stockade_slurm"

// Commands are the Slurm commands a sandbox started with --slurm finds on
// its PATH, each a shim.
var Commands = []string{"sbatch", "srun", "squeue", "sacct", "scancel", "scontrol", "sinfo", "salloc", "sacctmgr"}

func init() { sandbox.Entrypoints[Entry] = clientMain }

// clientMain is a shim: it sends the command to the chaperon and prints the
// answer. It runs inside the sandbox and holds nothing the sandbox does not.
func clientMain() int {
	if len(os.Args) < 3 {
		fmt.Fprintf(os.Stderr, "stockade: %s is run by the Slurm shims of a sandbox started with --slurm\n", Entry)
		return 2
	}
	name := filepath.Base(os.Args[2])
	if !slices.Contains(Commands, name) {
		fmt.Fprintf(os.Stderr, "stockade: %s is not a Slurm command the chaperon answers\n", name)
		return 2
	}
	req := Request{Command: name, Args: os.Args[3:]}
	req.Cwd, _ = os.Getwd()
	if name == "sbatch" {
		if code := readScript(&req); code != 0 {
			return code
		}
	}
	code, err := Stream(sandboxnet.SlurmAddr, req, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: the Slurm chaperon did not answer: %v (is this a sandbox started with --slurm?)\n", name, err)
		return 1
	}
	return code
}

// readScript reads the batch script the way sbatch does: the first
// argument that is not an option, or stdin when there is none; with --wrap
// there is no script.
func readScript(req *Request) int {
	p, err := parse(sbatchFlags(), req.Args)
	if err != nil || p.has("wrap") {
		return 0 // the chaperon refuses a bad line with its reason
	}
	var data []byte
	if len(p.rest) > 0 {
		req.ScriptName = p.rest[0]
		data, err = os.ReadFile(p.rest[0])
	} else {
		req.ScriptName = "(stdin)"
		data, err = io.ReadAll(io.LimitReader(os.Stdin, MaxRequest))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbatch: error: Unable to open file %s\n", req.ScriptName)
		return 1
	}
	req.Script = data
	return 0
}

// Call sends one request to the chaperon at addr and returns its reply,
// the output of every frame together.
func Call(addr string, req Request) (Reply, error) {
	var out, errb bytes.Buffer
	code, err := Stream(addr, req, &out, &errb)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Stdout: out.Bytes(), Stderr: errb.Bytes(), Code: code}, nil
}

// Stream sends one request to the chaperon at addr, writes the output of
// each frame of the reply to stdout and stderr as it arrives, and returns
// the exit status of the last. One frame at a time is held.
func Stream(addr string, req Request, stdout, stderr io.Writer) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := writeFrame(c, req); err != nil {
		return 0, err
	}
	for {
		var rep Reply
		if err := readFrame(c, &rep, MaxFrame); err != nil {
			return 0, err
		}
		stdout.Write(rep.Stdout)
		stderr.Write(rep.Stderr)
		if !rep.More {
			return rep.Code, nil
		}
	}
}
