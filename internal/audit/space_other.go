//go:build !linux

package audit

import (
	"errors"
	"os"
)

var errNoFallocate = errors.New("fallocate is not supported on this system")

// allocate cannot preallocate here: the log has no reserve.
func allocate(*os.File, int64, int64) error { return errNoFallocate }

func unsupported(err error) bool { return errors.Is(err, errNoFallocate) }
