//go:build !linux

package engine

import (
	"errors"
	"os"
	"time"
)

// ErrNotSupported: the engine runs only inside a Linux sandbox.
var ErrNotSupported = errors.New("--containers is supported on Linux only")

// Host are the facts of the calling user the engine is planned from.
type Host struct {
	UID, GID   int
	Name       string
	UIDs, GIDs Maps
}

// Check reports that there is no engine here.
func Check() (Host, error) { return Host{}, ErrNotSupported }

// Engine is one sandbox's engine, seen from the supervisor.
type Engine struct {
	Registries []Registry
	Listeners  Listeners
	Started    time.Duration
}

// New prepares nothing here.
func New(Host, Options) *Engine { return &Engine{} }

// MapIDs fails here.
func (e *Engine) MapIDs(int) error { return ErrNotSupported }

// Start fails here.
func (e *Engine) Start() error { return ErrNotSupported }

// Close does nothing here.
func (e *Engine) Close() {}

// UseStore closes f here.
func (e *Engine) UseStore(f *os.File) { f.Close() }

// Store is a project's engine storage; there is none here.
type Store struct {
	Path     string
	Dev, Ino uint64
}

// OpenStore fails here.
func OpenStore(data, key string) (*Store, bool, error) { return nil, false, ErrNotSupported }

// MakeStoreDir does nothing here.
func MakeStoreDir(data string) error { return nil }

// Busy: nothing is here.
func Busy(data, key string) bool { return false }

// Close does nothing here.
func (s *Store) Close() error { return nil }
