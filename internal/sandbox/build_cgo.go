//go:build cgo

package sandbox

// cgoBuild: see memoryFacts.cgo. The cgo build tag is set whenever cgo is
// enabled, whether or not runtime/cgo ends up linked; either way init then
// keeps the supervisor's memory, which is always safe.
const cgoBuild = true
