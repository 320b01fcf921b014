//go:build cgo

package testenv

// CgoBuild: this test binary links cgo (a -race build does).
const CgoBuild = true
