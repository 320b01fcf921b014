//go:build !linux

package mount

// updateExclude does nothing here: placeholders need Linux.
func updateExclude(string, []string) error { return nil }
