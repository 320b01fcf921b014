//go:build !linux

package session

import (
	"errors"
	"os"
)

func allocate(f *os.File, n int64, keepSize bool) error {
	return errors.New("preallocating files is not supported on this system")
}
