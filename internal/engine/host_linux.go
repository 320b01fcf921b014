package engine

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// Tools are the host programs the engine needs, each with the Debian
// package that has it.
var Tools = []struct{ Name, Package string }{
	{"podman", "podman"},
	{"crun", "crun"},
	{"newuidmap", "uidmap"},
	{"newgidmap", "uidmap"},
	{"slirp4netns", "slirp4netns"},
	{"nsenter", "util-linux"},
}

// Host are the facts of the calling user the engine is planned from.
type Host struct {
	UID, GID   int
	Name       string
	UIDs, GIDs Maps
}

// The files of the users' subordinate ids (subuid(5), subgid(5)).
const (
	subUIDFile = "/etc/subuid"
	subGIDFile = "/etc/subgid"
)

// Check finds what the engine needs on this host; the error names what is
// missing and the command that adds it.
func Check() (Host, error) { return check(subUIDFile, subGIDFile) }

// check is Check with the subordinate id files named, for a test.
func check(subUIDs, subGIDs string) (Host, error) {
	var missing []string
	for _, t := range Tools {
		if tool(t.Name) == "" {
			missing = append(missing, t.Package)
		}
	}
	if len(missing) > 0 {
		return Host{}, &Missing{What: "podman and its helpers (missing: " + strings.Join(dedup(missing), ", ") + ")",
			Fix: "apt-get install podman crun uidmap slirp4netns"}
	}
	// slirp4netns opens the tun device as the engine's root, which is the
	// user: the user must be able to open it, as for podman without
	// stockade.
	if f, err := os.OpenFile(mount.TunDevice, os.O_RDWR, 0); err != nil {
		return Host{}, &Missing{What: mount.TunDevice + " that you can open (" + errText(err) + ")",
			Fix: "chmod 0666 " + mount.TunDevice + " (the mode udev gives it; if it is missing: modprobe tun)"}
	} else {
		f.Close()
	}
	h := Host{UID: os.Getuid(), GID: os.Getgid()}
	if u, err := user.LookupId(strconv.Itoa(h.UID)); err == nil {
		h.Name = u.Username
	}
	su, err1 := subIDs(subUIDs, h.Name, h.UID)
	sg, err2 := subIDs(subGIDs, h.Name, h.UID)
	if err1 != nil || err2 != nil {
		n := h.Name
		if n == "" {
			n = strconv.Itoa(h.UID)
		}
		var none []string
		for _, err := range []error{err1, err2} {
			if err != nil {
				none = append(none, err.Error())
			}
		}
		free := FreeStart(readAll(subUIDs), readAll(subGIDs))
		r := fmt.Sprintf("%d-%d", free, free+minCount-1)
		return Host{}, &Missing{What: fmt.Sprintf("%d subordinate uids and gids for %s (%s)", minCount, n, strings.Join(none, ", ")),
			Fix: "usermod --add-subuids " + r + " --add-subgids " + r + " " + n}
	}
	if h.UIDs, err1 = Plan(h.UID, su); err1 != nil {
		return Host{}, fmt.Errorf("--containers: %s: %w", subUIDs, err1)
	}
	if h.GIDs, err2 = Plan(h.GID, sg); err2 != nil {
		return Host{}, fmt.Errorf("--containers: %s: %w", subGIDs, err2)
	}
	return h, nil
}

// errText is err's cause without the path it names.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func subIDs(file, name string, id int) (Range, error) {
	f, err := os.Open(file)
	if err != nil {
		return Range{}, err
	}
	defer f.Close()
	if r, ok := SubIDs(bufio.NewReader(f), name, id); ok {
		return r, nil
	}
	return Range{}, fmt.Errorf("none in %s", file)
}

// systemDirs are where the engine's tools are looked for: not along PATH,
// which a session's supervisor does not have and which must not choose
// the setuid helpers stockade runs.
var systemDirs = []string{"/usr/bin", "/usr/sbin", "/bin", "/sbin"}

// tool is the path of the named program in systemDirs, or "".
func tool(name string) string {
	for _, d := range systemDirs {
		p := d + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func readAll(file string) string {
	b, _ := os.ReadFile(file)
	return string(b)
}

func dedup(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// namespaces are the ones of init the launcher joins, in nsenter's flags.
var namespaces = []struct{ file, flag string }{
	{"user", "--user"}, {"mnt", "--mount"}, {"net", "--net"}, {"pid", "--pid"}, {"ipc", "--ipc"}, {"uts", "--uts"},
}

// Engine is one sandbox's engine, seen from the supervisor.
type Engine struct {
	// Registries are what --registry-allow names: the engine's
	// registries.conf marks those on plain HTTP insecure.
	Registries []Registry
	// Listeners, after Start, are the pods' and the registry proxy's.
	Listeners Listeners
	host      Host
	opt       Options
	ns        []*os.File
	events    *os.File     // the hooks' events socket, until the launcher has bound it
	heard     net.Listener // the same socket, once it listens
	store     *os.File     // the project's storage, a detached mount (UseStore); nil: a tmpfs
	proc      *engineProc  // the engine's process, once started
	// Started is how long the launcher took to have the socket listening.
	Started time.Duration
}

// New prepares the engine of one sandbox.
func New(h Host, o Options) *Engine { return &Engine{host: h, opt: o} }

// MapIDs writes the sandbox init's id maps (sandbox.Options.MapIDs) and
// opens its namespaces for the launcher to join later: both while init
// is still dumpable, so that /proc/PID is its owner's. /proc/PID names
// init and nothing else: it is our child, not yet reaped, so its pid
// cannot have been reused, and procfs holds no link the sandbox made.
func (e *Engine) MapIDs(pid int) error {
	p := strconv.Itoa(pid)
	if e.host.UID == 0 {
		for _, f := range []struct{ name, data string }{
			{"uid_map", File(e.host.UIDs.Sandbox)}, {"gid_map", File(e.host.GIDs.Sandbox)},
		} {
			if err := os.WriteFile("/proc/"+p+"/"+f.name, []byte(f.data), 0); err != nil {
				return fmt.Errorf("mapping the sandbox's ids for the engine: %w", err)
			}
		}
	} else {
		for _, t := range []struct {
			tool string
			m    []Mapping
		}{{"newuidmap", e.host.UIDs.Sandbox}, {"newgidmap", e.host.GIDs.Sandbox}} {
			out, err := exec.Command(tool(t.tool), append([]string{p}, Args(t.m)...)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("mapping the sandbox's ids for the engine: %s: %w: %s", t.tool, err, strings.TrimSpace(string(out)))
			}
		}
	}
	for _, n := range namespaces {
		f, err := os.Open("/proc/" + p + "/ns/" + n.file)
		if err != nil {
			e.closeNS()
			return fmt.Errorf("opening the sandbox's namespaces for the engine: %w", err)
		}
		e.ns = append(e.ns, f)
	}
	return nil
}

// UseStore gives the engine the project's storage: a detached mount of
// its directory (mount.Plan.Store), which the launcher mounts at the
// engine's storage in the engine's mount namespace alone. Without it the
// storage is a tmpfs that ends with the sandbox. The engine owns f.
func (e *Engine) UseStore(f *os.File) {
	if e.store != nil {
		e.store.Close()
	}
	e.store = f
}

// closeNS releases the namespaces MapIDs opened.
func (e *Engine) closeNS() {
	for _, f := range e.ns {
		f.Close()
	}
	e.ns = nil
}

// Close releases what MapIDs and Start opened and stops hearing the
// hooks; the engine itself ends with the sandbox. The listeners of
// e.Listeners are the caller's.
func (e *Engine) Close() {
	e.closeNS()
	if e.store != nil {
		e.store.Close()
		e.store = nil
	}
	if e.events != nil {
		e.events.Close()
		e.events = nil
	}
	if e.heard != nil {
		e.heard.Close()
		e.heard = nil
	}
	e.proc.close()
	if e.Started != 0 {
		// The engine has ended with the sandbox by now.
		cleanCgroups()
	}
}

// Start runs the launcher in the sandbox's namespaces and returns once the
// engine's socket listens: a client that connects from then on waits for
// the engine rather than failing. The listeners the launcher made for the
// pods' proxies and the registry proxy are then in e.Listeners, the
// caller's to serve or close.
func (e *Engine) Start() error {
	defer e.closeNS()
	t0 := time.Now()
	events, err := eventsSocket()
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	e.events = events
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	defer self.Close()
	// The launcher answers on a socket: "ready" with the listeners'
	// descriptors, or what went wrong.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", os.NewSyscallError("socketpair", err))
	}
	ready, readyW := os.NewFile(uintptr(pair[0]), "ready"), os.NewFile(uintptr(pair[1]), "ready")
	defer ready.Close()
	cfg, cfgW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return fmt.Errorf("starting the container engine: %w", err)
	}
	defer cfg.Close()
	// fds 3.. in the launcher: the namespaces, then the binary, the
	// ready socket, the events socket and the storage, if any.
	files := append(append([]*os.File{}, e.ns...), self, readyW, events)
	var args []string
	for i, n := range namespaces {
		args = append(args, fmt.Sprintf("%s=/proc/self/fd/%d", n.flag, 3+i))
	}
	exe := 3 + len(e.ns)
	store := "-1"
	if e.store != nil {
		files = append(files, e.store)
		store = strconv.Itoa(exe + 3)
	}
	args = append(args, "--", fmt.Sprintf("/proc/self/fd/%d", exe), launchArg, strconv.Itoa(exe+1), strconv.Itoa(exe+2), store)
	cmd := exec.Command(tool("nsenter"), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg, e.opt.Log, e.opt.Log
	cmd.ExtraFiles = files
	if err := cmd.Start(); err != nil {
		readyW.Close()
		cfgW.Close()
		return fmt.Errorf("starting the container engine: %w", err)
	}
	readyW.Close()
	go cmd.Wait()
	facts, err := e.facts()
	if err == nil {
		err = writeLaunch(cfgW, launch{UID: e.host.UID, GID: e.host.GID, UIDs: e.host.UIDs.Engine, GIDs: e.host.GIDs.Engine,
			Registries: e.Registries, Facts: facts})
	}
	cfgW.Close()
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	msg, fds, err := readReady(ready)
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	if msg != "ready" {
		closeAll(fds)
		if msg == "" {
			msg = "the launcher exited"
		}
		return fmt.Errorf("starting the container engine: %s (its log has more)", msg)
	}
	// The launcher has mounted the storage: the supervisor keeps no way
	// into it.
	if e.store != nil {
		e.store.Close()
		e.store = nil
	}
	if e.Listeners, e.proc, err = toListeners(fds); err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	e.Listeners.Registry = engineOnly{Listener: e.Listeners.Registry, proc: e.proc, stranger: e.opt.OnStranger}
	e.Started = time.Since(t0)
	if e.heard, err = net.FileListener(events); err != nil {
		e.Listeners.Close()
		e.Listeners = Listeners{}
		return fmt.Errorf("starting the container engine: hearing the hooks: %w", err)
	}
	events.Close()
	e.events = nil
	go hear(e.heard, e.opt.OnRefusal)
	return nil
}

// readReady reads the launcher's one message and the descriptors it
// carries.
func readReady(f *os.File) (string, []int, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*(len(engineListeners)+1)))
	n, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return "", nil, os.NewSyscallError("recvmsg", err)
	}
	var fds []int
	if oobn > 0 {
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return "", nil, err
		}
		for _, c := range cmsgs {
			got, err := unix.ParseUnixRights(&c)
			if err != nil {
				closeAll(fds)
				return "", nil, err
			}
			fds = append(fds, got...)
		}
	}
	return strings.TrimSpace(string(buf[:n])), fds, nil
}

// toListeners makes net values of the launcher's listeners, in the order
// of engineListeners, and takes the pidfd of the engine's process, which
// comes last.
func toListeners(fds []int) (Listeners, *engineProc, error) {
	var ls Listeners
	if len(fds) != len(engineListeners)+1 {
		closeAll(fds)
		return ls, nil, fmt.Errorf("the launcher sent %d descriptors, not %d listeners and a pidfd", len(fds), len(engineListeners))
	}
	proc, err := newEngineProc(fds[len(engineListeners)])
	if err != nil {
		closeAll(fds[:len(engineListeners)])
		return ls, nil, err
	}
	for i, l := range engineListeners {
		// The net values hold duplicates; f is closed either way.
		f := os.NewFile(uintptr(fds[i]), l.addr)
		var err error
		if l.network == "udp" {
			*l.packet(&ls), err = net.FilePacketConn(f)
		} else {
			*l.stream(&ls), err = net.FileListener(f)
		}
		f.Close()
		if err != nil {
			closeAll(fds[i+1 : len(engineListeners)])
			ls.Close()
			proc.close()
			return Listeners{}, nil, err
		}
	}
	return ls, proc, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
