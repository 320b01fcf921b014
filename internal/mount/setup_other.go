//go:build !linux

package mount

import "errors"

// Setup is Linux-only.
func Setup(Plan, string) error {
	return errors.New("mount namespaces are not supported on this system")
}
