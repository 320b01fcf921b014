//go:build !linux

package mount

import "errors"

var errNotSupported = errors.New("placeholders need Linux")

func lstatPlaceholder(Placeholder) (placeholderStat, error) {
	return placeholderStat{}, errNotSupported
}

func createPlaceholder(Placeholder) (Placeholder, error) { return Placeholder{}, errNotSupported }

func removePlaceholder(Placeholder, Stash) error { return errNotSupported }

func (s Stash) take(Placeholder) (Placeholder, error) { return Placeholder{}, errNotSupported }
