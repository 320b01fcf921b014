//go:build linux

// Command probe is the attacker of the escape battery: run inside the sandbox, each
// subcommand attempts one thing and prints exactly one line on stdout:
//
//	OK                  the attempt succeeded (for a must-work check: good;
//	                    for an escape: the sandbox failed)
//	OK <detail>         the same, with what was found (credential names, open fds)
//	DENIED <ERRNO>      a syscall failed, e.g. DENIED EPERM (unix.ErrnoName)
//	DENIED <reason>     a denial without an errno: EMPTY (a masked file reads
//	                    empty), NONE (nothing to steal), NOSUID, SIGSYS, EXIT<n>
//
// Diagnostics go to stderr. A usage error or an unexpected failure of the probe
// itself prints "PROBE-ERROR ..." and exits 2, so that it can never look like a
// denial. The probe is static (CGO_ENABLED=0) and uses only the standard library and
// golang.org/x/sys/unix, so it runs in any sandbox view that has its file.
//
// The probe attacks the Linux sandbox and is Linux-only: every file carries a
// linux build constraint but main_other.go, whose main says so and exits 2
// elsewhere, so that the module still builds and vets for any GOOS.
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// denial is a refusal that has no errno, printed as "DENIED <reason>".
type denial string

func (d denial) Error() string { return string(d) }

// found is a success that carries what the attempt obtained, printed as "OK <detail>".
type found string

func (f found) Error() string { return string(f) }

// action is one subcommand: exactly nargs arguments (-1: at least one).
type action struct {
	nargs int
	fn    func(args []string) error
}

// actions collects the subcommands registered by the other files of the probe.
var actions = map[string]action{}

func register(name string, nargs int, fn func(args []string) error) {
	if _, dup := actions[name]; dup {
		panic("probe: duplicate action " + name)
	}
	actions[name] = action{nargs, fn}
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	a, ok := actions[os.Args[1]]
	args := os.Args[2:]
	if !ok || (a.nargs >= 0 && len(args) != a.nargs) || (a.nargs < 0 && len(args) == 0) {
		usage()
	}
	report(a.fn(args))
}

func usage() {
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: probe ACTION ARGS...\nactions: %s\n", strings.Join(names, " "))
	fmt.Println("PROBE-ERROR usage")
	os.Exit(2)
}

// report prints the one result line for err.
func report(err error) {
	var (
		errno unix.Errno
		d     denial
		f     found
	)
	switch {
	case err == nil:
		fmt.Println("OK")
	case errors.As(err, &f):
		fmt.Println("OK", string(f))
	case errors.As(err, &d):
		fmt.Fprintln(os.Stderr, "probe:", err)
		fmt.Println("DENIED", string(d))
	case errors.As(err, &errno):
		fmt.Fprintln(os.Stderr, "probe:", err)
		name := unix.ErrnoName(errno)
		if name == "" {
			name = fmt.Sprintf("ERRNO%d", int(errno))
		}
		fmt.Println("DENIED", name)
	default:
		fmt.Fprintln(os.Stderr, "probe:", err)
		fmt.Println("PROBE-ERROR", err)
		os.Exit(2)
	}
}

// errnoOf turns a raw syscall's errno into an error (nil for 0).
func errnoOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
