package egress

import (
	"net/netip"
	"sync"
)

// maxAnswered bounds the addresses the DNS stub remembers for capture: a
// sandbox that resolves more names than this forgets the oldest, and a
// captured connection to a forgotten address is decided by its address.
const maxAnswered = 4096

// answered maps each address the DNS stub gave out to the name it answered
// for, newest answer first: a captured connection that names nothing
// itself (SSH, git://, a database protocol) is decided as a connection to
// that name. Where two names share an address (a CDN), the latest answer
// names it.
type answered struct {
	mu    sync.Mutex
	names map[netip.Addr]string
	order []netip.Addr // a ring: the oldest entry is at next
	next  int
}

func (a *answered) remember(name string, addrs []netip.Addr) {
	if len(addrs) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.names == nil {
		a.names = map[netip.Addr]string{}
	}
	for _, ad := range addrs {
		if _, ok := a.names[ad]; !ok {
			if len(a.order) < maxAnswered {
				a.order = append(a.order, ad)
			} else {
				delete(a.names, a.order[a.next])
				a.order[a.next] = ad
				a.next = (a.next + 1) % maxAnswered
			}
		}
		a.names[ad] = name
	}
}

// name is the name the stub last answered addr for, or "".
func (a *answered) name(addr netip.Addr) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.names[addr.Unmap()]
}
