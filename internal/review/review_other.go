//go:build !linux

package review

import (
	"errors"
	"time"
)

// ErrNotSupported: the review resolves paths with openat2, which needs Linux.
var ErrNotSupported = errors.New("reviewing the workdir needs Linux")

// Snapshot is the state of the watched files before a run.
type Snapshot struct{}

// Before returns ErrNotSupported.
func Before(string, []Watch) (*Snapshot, error) { return nil, ErrNotSupported }

// After returns ErrNotSupported.
func (*Snapshot) After() ([]Change, error) { return nil, ErrNotSupported }

// Setuid is a file made setuid during the run (Linux only).
type Setuid struct {
	Path string
	Err  error
}

func (s Setuid) String() string { return s.Path }

// Detail is empty.
func (Setuid) Detail() string { return "" }

// Start is the time now.
func Start() time.Time { return time.Now() }

// StripSetuid returns ErrNotSupported.
func StripSetuid(string, time.Time) ([]Setuid, error) { return nil, ErrNotSupported }

// Strip says what a sweep removes.
type Strip uint8

// What a sweep removes.
const (
	SweepSetuid Strip = 1 << iota
	SweepShared
)

// Sweep returns ErrNotSupported.
func Sweep(string, time.Time, Strip) ([]Setuid, error) { return nil, ErrNotSupported }

// OthersReach is false.
func OthersReach(string) bool { return false }
