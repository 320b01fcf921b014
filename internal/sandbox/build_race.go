//go:build race

package sandbox

// raceBuild: see memoryFacts.race.
const raceBuild = true
