// Package caps drops Linux capabilities from the calling thread: the bounding
// set first (so no later execve can regain a capability from a file), then the
// ambient set, then inheritable, permitted and effective together.
//
// Capabilities are per-thread. DropAll must run on the locked OS thread that
// will fork or execve the command; it clears the capability sets of the other
// threads too (all-threads capset), while the bounding set, which only
// matters at execve, is dropped on the calling thread.
package caps

import "errors"

// ErrNotSupported is returned on systems without Linux capabilities.
var ErrNotSupported = errors.New("capabilities are not supported on this system")
