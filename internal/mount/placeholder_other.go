//go:build !linux

package mount

import (
	"errors"
	"time"
)

var errNotSupported = errors.New("placeholders need Linux")

type parents struct{}

func newParents() parents { return parents{} }
func (parents) close()    {}

func lstatPlaceholder(Placeholder, parents) (placeholderStat, error) {
	return placeholderStat{}, errNotSupported
}

func createPlaceholder(Placeholder, parents) (Placeholder, error) {
	return Placeholder{}, errNotSupported
}

func removePlaceholder(Placeholder, Stash, parents) error { return errNotSupported }

func (s Stash) take(Placeholder, parents) (Placeholder, error) { return Placeholder{}, errNotSupported }

func (s Stash) open() (Stash, func()) { return s, func() {} }

// Unchanged reports false here.
func Unchanged(Placeholder) bool { return false }

func renameNoReplace(string, string) error { return errNotSupported }

func renameExchange(string, string) error { return errNotSupported }

func madeSince(Placeholder, time.Time) (uint64, bool) { return 0, false }

func (s Stash) stock(Placeholder, parents) uint64 { return 0 }

func inoAt(Placeholder) uint64 { return 0 }
