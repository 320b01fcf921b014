//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// ErrNotSupported: the native backend needs Linux.
var ErrNotSupported = errors.New("the native sandbox needs Linux")

// Run returns ErrNotSupported.
func Run(Spec, Options) (int, error) { return ExitSetup, ErrNotSupported }

// ProbeNamespaces returns ErrNotSupported.
func ProbeNamespaces() error { return ErrNotSupported }

// Smoke returns ErrNotSupported.
func Smoke() (captureOff, err error) { return nil, ErrNotSupported }

// Sandbox is a started sandbox (Linux only).
type Sandbox struct{}

// Start returns ErrNotSupported.
func Start(Spec, Options) (*Sandbox, error) { return nil, ErrNotSupported }

// Kill does nothing.
func (*Sandbox) Kill() {}

// Abort returns ErrNotSupported.
func (*Sandbox) Abort(error) (int, error) { return ExitSetup, ErrNotSupported }

// Wait returns ErrNotSupported.
func (*Sandbox) Wait() (int, error) { return ExitSetup, ErrNotSupported }

// Warm does nothing.
func Warm() {}

// WarmFacts does nothing.
func WarmFacts() {}

// RegisterSignals does nothing.
func RegisterSignals() {}

// SignalsWhenIdle does nothing.
func SignalsWhenIdle(func(os.Signal)) {}

// DefaultIdle does nothing.
func DefaultIdle(os.Signal) {}

// KeepsMemory reports whether sandbox init keeps the supervisor's memory:
// there is no sandbox here.
func KeepsMemory() (bool, string) { return false, "" }
