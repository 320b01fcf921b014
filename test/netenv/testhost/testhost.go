// Package testhost names what the host of the test network
// (test/netenv/server, run by scripts/testnet.sh) serves, so that the
// server and the end-to-end tests that fetch from it share one definition.
package testhost

// Addr is the address of the test host's web servers (HTTP :80, HTTPS :443),
// where every name of the presets is served.
const Addr = "198.51.100.10"

// The package the registry of each preset serves: one name per ecosystem,
// one version for all. Each holds its version (for Python a module
// stockade_probe with VERSION) for a test to print once the client has
// fetched it.
const (
	ProbeVersion = "1.2.3"
	PyPIProject  = "stockade-probe" // on pypi.org and files.pythonhosted.org
)
