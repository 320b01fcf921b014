// Package netns configures the network namespace of the sandbox from inside:
// for now only the loopback interface, which is the whole network of a
// sandbox with network "none".
package netns

import "errors"

// ErrNotSupported is returned on systems without network namespaces.
var ErrNotSupported = errors.New("network namespaces are not supported on this system")
