// Package escape is the escape battery: end-to-end tests that drive the built
// stockade binary and try, from inside the sandbox, to break out of it.
//
// Each row of the tables (rows_*_test.go) runs the probe (./probe) or a shell script
// inside `stockade run` and names the expected result: the denial an escape must meet
// ("DENIED EPERM", "DENIED EROFS", "DENIED EMPTY", ...), or "OK" for what a coding
// agent must still be able to do (compile, test, commit, use loopback). After every
// row the host-side fixture is compared with a snapshot taken before, so an escape
// that the probe misreports still fails the row.
//
// Every row runs as the invoking user and, when the tests run as root, again as the
// unprivileged user stockade-test (subtests root/NAME and user/NAME).
//
// TestBatteryInContainer runs the rows once more from inside a container that the
// engine of `stockade run --containers` starts, the workdir bound at its own path:
// rows share one sandbox, its engine and one container unless their fixtures clash;
// a row whose answer differs there, or that means nothing there, says why
// (battery_container_test.go).
//
// Environment:
//
//	STOCKADE_BIN       a prebuilt stockade binary (default: built from this module)
//	STOCKADE_PROBE     a prebuilt probe binary (default: built from ./probe)
//	STOCKADE_MUST_WORK=1  a row that would be skipped (no sandbox on this kernel,
//	                   a fixture that needs root) fails instead
//
// A fixed escape becomes a new row; a row is never deleted to make the suite pass.
package escape
