//go:build !linux

package sandboxhome

import "errors"

// ErrNotSupported: writing below a HOME without following links needs
// Linux's openat2 (package beneath).
var ErrNotSupported = errors.New("the sandbox HOME needs Linux")

// Home is a sandbox HOME (Linux only).
type Home struct {
	// Path is the HOME on the host.
	Path string
}

// Open returns ErrNotSupported.
func Open(string, string, func(string)) (*Home, error) { return nil, ErrNotSupported }

// Close does nothing.
func (*Home) Close() error { return nil }

// WriteGuide returns ErrNotSupported.
func (*Home) WriteGuide(string, string) error { return ErrNotSupported }

// Seed returns ErrNotSupported.
func (*Home) Seed(map[string]string) error { return ErrNotSupported }

// WriteShim returns ErrNotSupported.
func (*Home) WriteShim(string, string) error { return ErrNotSupported }
