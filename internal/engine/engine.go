// Package engine runs a container engine (podman's API service, which
// speaks both the Docker and the libpod API) inside a session's sandbox,
// held by the sandbox's walls: the command reaches it at Socket, and the
// engine sees the sandbox's filesystem view, network namespace and PID
// namespace, never the host's.
//
// The engine runs as root of a child user namespace of the sandbox's,
// which maps the user's subordinate ids (/etc/subuid, /etc/subgid): a map
// of the user's own id alone is not enough for a container's devpts
// (gid=5) or an image's files. Every mount the engine inherits from the
// sandbox reaches it locked (its user namespace is less privileged than
// the one that made them), so a container that binds the workdir still
// sees the masked paths masked and the protected ones read-only, even
// --privileged, even with the engine fully under the command's control.
//
// The processes, in order:
//
//	supervisor                          sandbox user namespace
//	  clone init (Spec.Engine)
//	  newuidmap/newgidmap init ───────▶ ids: uid 0 = the first subordinate id
//	  open init's namespaces            (root: the user's own 0)
//	  ...init builds the view...
//	  nsenter init's namespaces ──────▶ launcher (uid 0, all capabilities of
//	                                    the sandbox's user namespace only):
//	                                    Socket made; a private mount namespace
//	                                    with a fresh root for the engine
//	                                    (fresh /proc, /run, /tmp, /dev/shm,
//	                                    /sys, the generated configuration)
//	                                    clone(NEWUSER|NEWNS|NEWCGROUP) ─▶ engine
//	  ◀── "ready" ─────────────────────                 root of its namespace;
//	  the command starts                                cgroup2, then podman
//
// The launcher stays, without a capability, as the engine's reaper and as
// the filter in front of its API: the command's clients reach podman only
// through it (apiFilter). The launcher and the engine, like every process
// of the sandbox's PID namespace, die with init.
package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/internal/ocihook"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Socket is the engine's API socket inside the sandbox; DOCKER_HOST and
// CONTAINER_HOST point at it (Env).
const Socket = "/run/stockade/engine.sock"

// ClientConf is the podman client's containers.conf inside the sandbox:
// the libpod API takes a container's defaults from the client, and a
// container with a cgroup of its own cannot start in the engine's
// namespace. It is a default, not a wall: the engine's own configuration
// is out of the command's reach.
const ClientConf = "/run/stockade/containers.conf"

// Env are the variables that point the docker and podman clients at the
// engine.
func Env() []string {
	return []string{"DOCKER_HOST=unix://" + Socket, "CONTAINER_HOST=unix://" + Socket, "CONTAINERS_CONF=" + ClientConf}
}

// Listeners are the sockets the launcher makes in the sandbox's network
// namespace for the supervisor to serve: the pods' HTTP and SOCKS5 proxies
// and DNS stub on sandboxnet.PodHost, and the registry proxy of the
// engine's pulls.
type Listeners struct {
	PodHTTP, PodSOCKS5, PodDNSTCP net.Listener
	PodDNSUDP                     net.PacketConn
	Registry                      net.Listener
}

// Close closes every listener.
func (l Listeners) Close() {
	for _, c := range []net.Listener{l.PodHTTP, l.PodSOCKS5, l.PodDNSTCP, l.Registry} {
		if c != nil {
			c.Close()
		}
	}
	if l.PodDNSUDP != nil {
		l.PodDNSUDP.Close()
	}
}

// engineListeners are the launcher's listeners, in the order it sends them.
var engineListeners = []struct {
	network, addr string
	stream        func(*Listeners) *net.Listener
	packet        func(*Listeners) *net.PacketConn
}{
	{"tcp", sandboxnet.PodHTTPProxyAddr, func(l *Listeners) *net.Listener { return &l.PodHTTP }, nil},
	{"tcp", sandboxnet.PodSOCKS5Addr, func(l *Listeners) *net.Listener { return &l.PodSOCKS5 }, nil},
	{"tcp", sandboxnet.PodDNSAddr, func(l *Listeners) *net.Listener { return &l.PodDNSTCP }, nil},
	{"udp", sandboxnet.PodDNSAddr, nil, func(l *Listeners) *net.PacketConn { return &l.PodDNSUDP }},
	{"tcp", sandboxnet.RegistryProxyAddr, func(l *Listeners) *net.Listener { return &l.Registry }, nil},
}

// Missing is what the engine needs and this host lacks, with the command
// that adds it.
type Missing struct {
	What, Fix string
}

func (m *Missing) Error() string {
	return "--containers needs " + m.What + "; fix: " + m.Fix
}

// Range is a range of subordinate ids: Count ids from Start.
type Range struct {
	Start, Count int
}

// minCount is the fewest subordinate ids an engine works with: an image's
// files are owned by ids up to 65534 (nobody).
const minCount = 65536

// SubIDs finds the first range of user (by name or by uid) in a
// /etc/subuid or /etc/subgid file.
func SubIDs(r io.Reader, name string, id int) (Range, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(f) != 3 || (f[0] != name && f[0] != strconv.Itoa(id)) {
			continue
		}
		start, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || start < 0 || count < minCount {
			continue
		}
		return Range{start, count}, true
	}
	return Range{}, false
}

// FreeStart is the first id above every range of the given /etc/subuid
// and /etc/subgid contents (100000 at least): where a new range may go.
func FreeStart(files ...string) int {
	free := 100000
	for _, f := range files {
		for _, line := range strings.Split(f, "\n") {
			p := strings.Split(strings.TrimSpace(line), ":")
			if len(p) != 3 {
				continue
			}
			start, err1 := strconv.Atoi(p[1])
			count, err2 := strconv.Atoi(p[2])
			if err1 == nil && err2 == nil && start+count > free {
				free = start + count
			}
		}
	}
	return free
}

// Maps are the id maps of one kind (uid or gid) the engine needs: the
// sandbox's user namespace's, in host ids, and the engine's, in the
// sandbox's ids.
type Maps struct {
	Sandbox, Engine []Mapping
}

// Mapping is one line of a uid_map or gid_map file.
type Mapping struct {
	Inner, Outer, Count int
}

// Plan maps own (the user's uid or gid) and its subordinate range sub.
//
// In the sandbox, own stays own (the command runs as the user) and id 0 is
// the launcher's: for a user that is not root, the first subordinate id,
// so that the command, which is not id 0, does not own the engine's user
// namespace (the owner holds every capability in it). The rest of the
// range maps to itself. In the engine's namespace, 0 is the user (a file a
// container writes in the workdir is the user's) and 1 up the rest of the
// range.
func Plan(own int, sub Range) (Maps, error) {
	if own == 0 {
		return Maps{
			Sandbox: []Mapping{{0, 0, 1}, {sub.Start, sub.Start, sub.Count}},
			Engine:  []Mapping{{0, 0, 1}, {1, sub.Start, sub.Count}},
		}, nil
	}
	if own >= sub.Start && own < sub.Start+sub.Count {
		return Maps{}, fmt.Errorf("the subordinate ids %d-%d hold the user's own id %d: give the user a range that does not", sub.Start, sub.Start+sub.Count-1, own)
	}
	rest := Range{sub.Start + 1, sub.Count - 1}
	return Maps{
		Sandbox: []Mapping{{0, sub.Start, 1}, {own, own, 1}, {rest.Start, rest.Start, rest.Count}},
		Engine:  []Mapping{{0, own, 1}, {1, rest.Start, rest.Count}},
	}, nil
}

// Args are a map as newuidmap and newgidmap take it.
func Args(m []Mapping) []string {
	var a []string
	for _, l := range m {
		a = append(a, strconv.Itoa(l.Inner), strconv.Itoa(l.Outer), strconv.Itoa(l.Count))
	}
	return a
}

// File is a map as /proc/PID/uid_map takes it, in one write.
func File(m []Mapping) string {
	var b strings.Builder
	for _, l := range m {
		fmt.Fprintf(&b, "%d %d %d\n", l.Inner, l.Outer, l.Count)
	}
	return b.String()
}

// Options are what a session tells its engine.
type Options struct {
	// Log receives the engine's output (nil: dropped).
	Log *os.File
	// Workdir is the project's directory: the one a container may bind.
	Workdir string
	// RequireDigest refuses a container whose image is not named by digest.
	RequireDigest bool
	// OnRefusal hears each container the hooks refuse (nil: none).
	OnRefusal func(ocihook.Report)
	// OnStranger hears each connection to the registry proxy that the
	// engine did not make, which is refused (nil: none).
	OnStranger func(client string, why error)
}

// StoreDir is where a project's engine storage lives, relative to
// stockade's data directory: StoreDir/<key>, with the key of the
// project's sandbox HOME (sandboxhome.Key).
const StoreDir = "engine"
