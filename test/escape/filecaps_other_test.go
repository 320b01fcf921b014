//go:build !linux

package escape

import "errors"

// setFileCaps fails: file capabilities are Linux's.
func setFileCaps(string) error { return errors.New("file capabilities need Linux") }
