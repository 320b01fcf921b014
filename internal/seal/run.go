package seal

import "fmt"

// Options are what Run needs.
type Options struct {
	// Policy is the policy itself; when empty, it is read from PolicyFile,
	// or from descriptor 3 when that is empty too.
	Policy     []byte
	PolicyFile string
	// KeepCaps leaves the capability sets as they are, for a container's
	// entrypoint: its OCI config has cut them down already, and its own
	// start (a database dropping to its user) may need them. no_new_privs
	// still keeps execve from adding any.
	KeepCaps bool
	// Args is the command; Args[0] is looked up in Env's PATH.
	Args []string
	Env  []string
}

// Error is a failure of seal itself, with the exit status it maps to.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(code int, format string, args ...any) *Error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}
