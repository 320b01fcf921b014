//go:build !linux

package caps

// DropAll returns ErrNotSupported.
func DropAll() error { return ErrNotSupported }
