//go:build !linux

package seccomp

// Install returns ErrNotSupported: seccomp exists only on Linux.
func Install([]Instruction) error { return ErrNotSupported }
