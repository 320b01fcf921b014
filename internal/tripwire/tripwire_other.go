//go:build !linux

package tripwire

import "context"

// Take returns ErrNotSupported.
func (Limits) Take([]string) (*Snapshot, error) { return nil, ErrNotSupported }

// Diff returns ErrNotSupported.
func (*Snapshot) Diff() ([]Change, error) { return nil, ErrNotSupported }

// Restore returns ErrNotSupported.
func (*Snapshot) Restore() ([]Change, error) { return nil, ErrNotSupported }

// Watch returns ErrNotSupported.
func (*Snapshot) Watch(context.Context, func(Change)) error { return ErrNotSupported }
