// Package testhost names what the host of the test network
// (test/netenv/server, run by scripts/testnet.sh) serves, so that the
// server and the end-to-end tests that fetch from it share one definition.
package testhost

// Addr is the address of the test host's web servers (HTTP :80, HTTPS :443),
// where every name of the presets is served.
const Addr = "198.51.100.10"

// The package the registry of each preset serves: one name per ecosystem,
// one version for all. Each holds a file VERSION (for Python a module
// stockade_probe with VERSION) with ProbeVersion in it, for a test to
// print once the client has fetched it.
const (
	ProbeVersion = "1.2.3"
	PyPIProject  = "stockade-probe"      // on pypi.org and files.pythonhosted.org
	GoModule     = "stockade.test/probe" // at v+ProbeVersion, on proxy.golang.org, storage.googleapis.com, sum.golang.org
	Crate        = "stockade-probe"      // on index.crates.io and static.crates.io
)

// GoSumDBKeyPath serves, on any host name over HTTP, the verifier key of
// the checksum database that the test host serves as sum.golang.org, made
// at start: a test passes it as GOSUMDB, so that the go command checks the
// module against that database with its own code, as it checks every
// module against the real one.
const GoSumDBKeyPath = "/testhost/gosumdb.vkey"
