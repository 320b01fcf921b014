package slurm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxFrame bounds a reply: a command's output. MaxRequest bounds a
// request: a job script and its arguments. A larger request is refused,
// not truncated.
const (
	MaxFrame   = 8 << 20
	MaxRequest = 1 << 20
)

// Request is what a shim sends: the command's name (sbatch, squeue, …),
// its arguments exactly as the shell gave them, the shim's working
// directory, and for a submission the job script's bytes as the shim read
// them inside the sandbox (the chaperon never opens a project file, so a
// path masked inside stays masked).
type Request struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Cwd     string   `json:"cwd"`
	// Script is the batch script (sbatch FILE, or sbatch's stdin); nil
	// for the other commands and for --wrap.
	Script []byte `json:"script,omitempty"`
	// ScriptName is the file the script came from, for the audit log.
	ScriptName string `json:"script_name,omitempty"`
}

// Reply is the chaperon's answer: what the shim prints, and its exit
// status. A command that runs as long as its job (srun) streams its
// output: each frame with More set carries what it wrote since the last
// (as data, never interpreted), and the last frame, without More, its
// exit status.
type Reply struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Code   int    `json:"code"`
	More   bool   `json:"more,omitempty"`
}

// writeFrame writes v as a 4-byte big-endian length and its JSON.
func writeFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > MaxFrame {
		return fmt.Errorf("frame of %d bytes is over the limit of %d", len(data), MaxFrame)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	if _, err := w.Write(append(n[:], data...)); err != nil {
		return err
	}
	return nil
}

// readFrame reads one frame of at most limit bytes into v. The buffer
// grows with what arrives, not with what the length claims.
func readFrame(r io.Reader, v any, limit uint32) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > limit {
		return fmt.Errorf("frame of %d bytes is over the limit of %d", size, limit)
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(size)))
	if err != nil {
		return err
	}
	if len(data) < int(size) {
		return io.ErrUnexpectedEOF
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errors.New("frame is not the expected JSON: " + err.Error())
	}
	return nil
}
