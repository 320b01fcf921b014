//go:build !linux

package mount

// createLinked creates p with content, atomically (see the Linux version).
func createLinked(p, content string) error { return createRenamed(p, content) }
