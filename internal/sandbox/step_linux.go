//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stepError wraps err as the failure of step, keeping the errno name.
func stepError(step string, err error, code int) *StepError {
	var se *StepError
	if errors.As(err, &se) {
		return se
	}
	e := &StepError{Step: step, Msg: err.Error(), Code: code}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		e.Errno = unix.ErrnoName(errno)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		e.Path = pe.Path
	}
	return e
}

// report writes e to fd as one JSON message; the reader treats EOF without a
// message as success.
func report(fd int, e *StepError) {
	b, _ := json.Marshal(e)
	unix.Write(fd, b)
}

// readSpec decodes the JSON spec the parent writes to specFD.
func readSpec(v any) error {
	f := os.NewFile(specFD, "spec")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
