package job

import (
	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/egress"
)

// The descriptor budget of the process that serves a session's proxies (the
// supervisor, or stockade run in the foreground). The sandboxed command
// decides how many connections it opens; the caps decide how many the
// server holds, so that a reserve is always left for what the command does
// not control: the control socket and its clients, the audit log, the
// session's files, the terminal, the listeners, and the DNS stub's
// upstream lookups (64 at once).
//
// Each capped connection may cost two descriptors: the client's, and its
// tunnel or upstream request. Go raises the soft RLIMIT_NOFILE to the hard
// limit when the process starts, so the limit read here is the hard one.
const (
	fdsPerConn = 2
	minReserve = 128  // a supervisor holds about 30 descriptors of its own
	maxReserve = 1024 // beyond it, a larger limit goes to the caps
)

// ConnCaps returns the connection caps of the egress proxy and of the auth
// proxy for a process allowed limit descriptors: each proxy's default, or
// less, so that both at their caps leave a quarter of the limit (at least
// 128, at most 1024 descriptors) to the rest of the process.
func ConnCaps(limit uint64) (proxy, auth int) {
	reserve := min(max(limit/4, minReserve), maxReserve)
	if limit <= reserve {
		return 1, 1
	}
	each := int((limit - reserve) / 2 / fdsPerConn)
	return max(1, min(egress.DefaultMaxConns, each)), max(1, min(authproxy.DefaultMaxConns, each))
}

// connCaps returns ConnCaps of this process's descriptor limit.
func connCaps() (proxy, auth int) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return ConnCaps(1024) // the kernel's default soft limit
	}
	return ConnCaps(lim.Cur)
}
