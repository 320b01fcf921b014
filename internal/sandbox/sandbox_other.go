//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// ErrNotSupported: the native backend needs Linux.
var ErrNotSupported = errors.New("the native sandbox needs Linux")

// Options are the host-side settings of one sandbox run.
type Options struct {
	Stdin, Stdout, Stderr *os.File
	OnStart               func(pid int) error
}

// Run returns ErrNotSupported.
func Run(Spec, Options) (int, error) { return ExitSetup, ErrNotSupported }

func initMain() int { return ExitSetup }
func execMain() int { return ExitSetup }

// ProbeNamespaces returns ErrNotSupported.
func ProbeNamespaces() error { return ErrNotSupported }

// Smoke returns ErrNotSupported.
func Smoke() error { return ErrNotSupported }
