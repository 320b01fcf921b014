//go:build !linux

package seal

import "errors"

// Run fails: Landlock and seccomp are Linux's.
func Run(Options) error {
	return &Error{ExitLandlock, errors.New("stockade seal needs Linux (Landlock and seccomp)")}
}
