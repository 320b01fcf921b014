// Package caps drops Linux capabilities from the calling thread: the bounding
// set first (so no later execve can regain a capability from a file), then the
// ambient set, then inheritable, permitted and effective together.
//
// Capabilities are per-thread. Drop must run on the locked OS thread that will
// execve the agent; other threads of a Go process keep theirs, which is
// harmless because execve discards them.
package caps

import "errors"

// ErrNotSupported is returned on systems without Linux capabilities.
var ErrNotSupported = errors.New("capabilities are not supported on this system")
