//go:build !linux

package netns

// LoopbackUp returns ErrNotSupported.
func LoopbackUp() error { return ErrNotSupported }

// Listen returns ErrNotSupported.
func Listen(network, addr string) (int, error) { return -1, ErrNotSupported }
