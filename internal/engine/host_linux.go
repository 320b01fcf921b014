package engine

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"
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

// Check finds what the engine needs on this host; the error names what is
// missing and the command that adds it.
func Check() (Host, error) {
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
	h := Host{UID: os.Getuid(), GID: os.Getgid()}
	if u, err := user.LookupId(strconv.Itoa(h.UID)); err == nil {
		h.Name = u.Username
	}
	su, err1 := subIDs("/etc/subuid", h.Name, h.UID)
	sg, err2 := subIDs("/etc/subgid", h.Name, h.UID)
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
		free := FreeStart(readAll("/etc/subuid"), readAll("/etc/subgid"))
		r := fmt.Sprintf("%d-%d", free, free+minCount-1)
		return Host{}, &Missing{What: fmt.Sprintf("%d subordinate uids and gids for %s (%s)", minCount, n, strings.Join(none, ", ")),
			Fix: "usermod --add-subuids " + r + " --add-subgids " + r + " " + n}
	}
	if h.UIDs, err1 = Plan(h.UID, su); err1 != nil {
		return Host{}, fmt.Errorf("--containers: /etc/subuid: %w", err1)
	}
	if h.GIDs, err2 = Plan(h.GID, sg); err2 != nil {
		return Host{}, fmt.Errorf("--containers: /etc/subgid: %w", err2)
	}
	return h, nil
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
	host   Host
	opt    Options
	ns     []*os.File
	events *os.File     // the hooks' events socket, until the launcher has bound it
	heard  net.Listener // the same socket, once it listens
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

// closeNS releases the namespaces MapIDs opened.
func (e *Engine) closeNS() {
	for _, f := range e.ns {
		f.Close()
	}
	e.ns = nil
}

// Close releases what MapIDs and Start opened and stops hearing the
// hooks; the engine itself ends with the sandbox.
func (e *Engine) Close() {
	e.closeNS()
	if e.events != nil {
		e.events.Close()
		e.events = nil
	}
	if e.heard != nil {
		e.heard.Close()
		e.heard = nil
	}
}

// Start runs the launcher in the sandbox's namespaces and returns once the
// engine's socket listens: a client that connects from then on waits for
// the engine rather than failing.
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
	ready, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	defer ready.Close()
	cfg, cfgW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return fmt.Errorf("starting the container engine: %w", err)
	}
	defer cfg.Close()
	// fds 3.. in the launcher: the namespaces, then the binary, the
	// ready pipe and the events socket.
	files := append(append([]*os.File{}, e.ns...), self, readyW, events)
	var args []string
	for i, n := range namespaces {
		args = append(args, fmt.Sprintf("%s=/proc/self/fd/%d", n.flag, 3+i))
	}
	exe := 3 + len(e.ns)
	args = append(args, "--", fmt.Sprintf("/proc/self/fd/%d", exe), launchArg, strconv.Itoa(exe+1), strconv.Itoa(exe+2))
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
		err = writeLaunch(cfgW, launch{UID: e.host.UID, GID: e.host.GID, UIDs: e.host.UIDs.Engine, GIDs: e.host.GIDs.Engine, Facts: facts})
	}
	cfgW.Close()
	if err != nil {
		return fmt.Errorf("starting the container engine: %w", err)
	}
	msg, _ := bufio.NewReader(ready).ReadString('\n')
	if msg != "ready\n" {
		if msg == "" {
			msg = "the launcher exited"
		}
		return fmt.Errorf("starting the container engine: %s (its log has more)", strings.TrimSpace(msg))
	}
	e.Started = time.Since(t0)
	if e.heard, err = net.FileListener(events); err != nil {
		return fmt.Errorf("starting the container engine: hearing the hooks: %w", err)
	}
	events.Close()
	e.events = nil
	go hear(e.heard, e.opt.OnRefusal)
	return nil
}
