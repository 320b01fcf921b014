//go:build !unix

package audit

import "os"

const oNoFollow = 0

// lock returns ErrNotSupported: without flock two writers could interleave.
func lock(*os.File) error { return ErrNotSupported }
