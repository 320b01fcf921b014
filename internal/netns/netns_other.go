//go:build !linux

package netns

// LoopbackUp returns ErrNotSupported.
func LoopbackUp() error { return ErrNotSupported }
