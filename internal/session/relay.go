package session

import (
	"runtime"

	"github.com/stockade-dev/stockade/internal/audit"
)

// chargeRelay counts the CPU of the calling goroutine, the relay of the
// command's output (pump), against the session's --cpus limit where the
// system allows it: with cgroup v1, the goroutine's thread joins the
// session's cpu group. Relaying costs the supervisor CPU in proportion to
// what the command prints, and without this a flood of output spent
// outside the limit what the limit holds the command to. Without a cpu
// group, or on cgroup v2 (see cgroup.JoinCPU), nothing is done and the
// goroutine stays free to move between threads. done must be called, on
// the same goroutine, when the relay ends.
func (s *supervisor) chargeRelay() (done func()) {
	if !s.cg.CPUThreads() {
		return func() {}
	}
	runtime.LockOSThread()
	leave, err := s.cg.JoinCPU()
	if err != nil {
		runtime.UnlockOSThread()
		s.log(audit.EventWarning, map[string]any{"message": "terminal output relay not counted against the cpu limit: " + err.Error()})
		return func() {}
	}
	return func() {
		// A thread that cannot leave stays locked: it then exits with
		// the goroutine, and leaves the group as it does.
		if leave() == nil {
			runtime.UnlockOSThread()
		}
	}
}
