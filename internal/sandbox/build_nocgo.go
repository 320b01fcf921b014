//go:build !cgo

package sandbox

const cgoBuild = false
