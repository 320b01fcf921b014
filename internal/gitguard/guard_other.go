//go:build !linux

package gitguard

// Guard is the git metadata of a project as it was before a session.
type Guard struct {
	AllowHooks bool
}

// Before returns ErrNotSupported: gitguard needs openat2.
func Before(workdir, id string, nested ...string) (*Guard, error) { return nil, ErrNotSupported }

// After returns ErrNotSupported.
func (g *Guard) After() ([]Finding, error) { return nil, ErrNotSupported }
