package seal

import "fmt"

// Options are what Run needs.
type Options struct {
	// PolicyFile is the policy's path; empty means descriptor 3.
	PolicyFile string
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
