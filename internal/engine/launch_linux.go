package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/ocihook"
	"github.com/stockade-dev/stockade/internal/sandbox"
)

// The roles of the stockade binary on the engine's side (see the package
// doc): the launcher, which nsenter starts in the sandbox's namespaces,
// and the engine's own first process, which becomes podman.
const (
	launchArg = "__stockade_engine_launch"
	serveArg  = "__stockade_engine_serve"
)

func init() {
	sandbox.Entrypoints[launchArg] = launchMain
	sandbox.Entrypoints[serveArg] = serveMain
}

// launch is what the supervisor tells the launcher, on its stdin.
type launch struct {
	UID, GID   int       // the user's, in the sandbox: the socket's owner
	UIDs, GIDs []Mapping // the engine's maps, in the sandbox's ids
	// Registries are --registry-allow's (registriesConf).
	Registries []Registry
	// Facts are the session's facts for the OCI hooks, written where the
	// engine cannot write (writeConf).
	Facts ocihook.Facts
}

func writeLaunch(w io.Writer, l launch) error { return json.NewEncoder(w).Encode(l) }

// launchMain is the launcher: uid 0 of the sandbox's user namespace, with
// all of its capabilities and none of the host's, in the sandbox's mount
// namespace before the command starts. It makes the socket, a private
// mount namespace with the engine's root, and the engine's process, says
// "ready" on the descriptor named by its first argument, and stays,
// without a capability, as the engine's reaper and as the filter in front
// of its API (apiFilter), which serves the socket. The second names the
// hooks' events socket, which it binds in the engine's root for the
// supervisor, which holds the same socket, to accept on.
func launchMain() int {
	if len(os.Args) < 5 {
		return 2
	}
	// What nsenter passed on (the sandbox's namespaces, the binary, the
	// pipes) must not reach the engine: only what it is given explicitly.
	if err := closeOnExec(); err != nil {
		fmt.Fprintf(os.Stderr, "stockade engine: %v\n", err)
		return 1
	}
	fd, err1 := strconv.Atoi(os.Args[2])
	efd, err2 := strconv.Atoi(os.Args[3])
	sfd, err3 := strconv.Atoi(os.Args[4])
	if err1 != nil || err2 != nil || err3 != nil {
		return 2
	}
	ready := os.NewFile(uintptr(fd), "ready")
	events := os.NewFile(uintptr(efd), "events")
	var store *os.File
	if sfd >= 0 {
		store = os.NewFile(uintptr(sfd), "store")
	}
	if err := launchEngine(ready, events, store); err != nil {
		fmt.Fprintf(os.Stderr, "stockade engine: %v\n", err)
		fmt.Fprintf(ready, "%v\n", err)
		return 1
	}
	return 0
}

func launchEngine(ready, events, store *os.File) error {
	var l launch
	if err := json.NewDecoder(os.Stdin).Decode(&l); err != nil {
		return fmt.Errorf("reading the launch: %w", err)
	}
	// The mount namespace made below is this thread's, and so is the
	// engine's process, forked from it.
	runtime.LockOSThread()
	ln, err := listen(l.UID, l.GID)
	if err != nil {
		return err
	}
	pods, err := podListen()
	if err != nil {
		return err
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return os.NewSyscallError("unshare", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the engine's mounts private: %w", err)
	}
	api, err := unixSocket()
	if err != nil {
		return fmt.Errorf("making podman's socket: %w", err)
	}
	if err := buildRoot(l, events, api, store); err != nil {
		return err
	}
	events.Close()
	if store != nil {
		store.Close()
	}
	// The engine's root is this thread's alone (the mount namespace and
	// pivot_root above): the filter, on any thread, reaches its sockets
	// through a descriptor of their directory.
	dir, err := unix.Open(confDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the engine's configuration: %w", os.NewSyscallError("open", err))
	}
	at := func(name string) string { return fmt.Sprintf("/proc/self/fd/%d/%s", dir, filepath.Base(name)) }
	filter := &apiFilter{
		dial:    func() (net.Conn, error) { return net.Dial("unix", at(podmanSocket)) },
		refused: func(r ocihook.Report) { ocihook.Send(at(EventsSocket), r) },
	}
	public, err := net.FileListener(ln)
	ln.Close()
	if err != nil {
		return fmt.Errorf("serving the engine's socket: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", serveArg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{api}
	cmd.Dir = serviceDir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP,
		UidMappings:                idMaps(l.UIDs),
		GidMappings:                idMaps(l.GIDs),
		GidMappingsEnableSetgroups: true,
		// The launcher's own id (the sandbox's 0) is not mapped in the
		// engine's namespace unless the user is root: become its 0, so
		// that the exec keeps the namespace's capabilities.
		Credential: &syscall.Credential{Uid: 0, Gid: 0},
	}
	// The launcher stays as the reaper of the engine's processes (conmon
	// double-forks): orphans must not go to init, whose kill(-1) at the
	// command's exit cannot reach them (Landlock scopes init's signals to
	// its own domain), and whose wait for its last children would then
	// never end. When init exits, the kernel kills the whole PID
	// namespace, the launcher and the engine with it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the engine's process: %w", err)
	}
	api.Close()
	// The supervisor tells the engine's own connections from others'
	// by this process (engineOnly): a pidfd of it goes with the
	// listeners.
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		return fmt.Errorf("opening a pidfd of the engine's process: %w", os.NewSyscallError("pidfd_open", err))
	}
	// Reaping and the filter need no capability: drop all, on every
	// thread, before the supervisor hears "ready" (a failure is the
	// session's) and before the filter serves a request.
	if err := dropCaps(); err != nil {
		return err
	}
	sent := append(pods, os.NewFile(uintptr(pidfd), "pidfd"))
	err = sendReady(ready, sent)
	for _, f := range sent {
		f.Close()
	}
	if err != nil {
		return err
	}
	ready.Close()
	go filter.serve(public)
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); err == unix.ECHILD {
			return nil
		}
	}
}

// unixSocket is a new, unbound stream socket.
func unixSocket() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	return os.NewFile(uintptr(fd), "socket"), nil
}

// closeOnExec marks every descriptor above stderr close-on-exec.
func closeOnExec() error {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing the launcher's descriptors: %w", err)
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// dropCaps empties the launcher's capability sets on every thread.
func dropCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		if e == syscall.ENOTSUP {
			return errors.New("the engine's launcher cannot drop its capabilities on every thread in a build with cgo; build stockade with CGO_ENABLED=0 (README, Quick start)")
		}
		return os.NewSyscallError("capset", e)
	}
	return nil
}

func idMaps(m []Mapping) []syscall.SysProcIDMap {
	var out []syscall.SysProcIDMap
	for _, l := range m {
		out = append(out, syscall.SysProcIDMap{ContainerID: l.Inner, HostID: l.Outer, Size: l.Count})
	}
	return out
}

// listen makes Socket in the sandbox's /run, owned by the user, in a
// directory only the launcher's uid may change; the engine takes it over
// as an activated socket, so a client connecting before the engine is up
// waits instead of failing.
//
// Plain paths are safe here: the launcher runs before the Wired stage
// returns, and init starts the command only after it, so no process of the
// sandbox exists yet to plant a link; /run is the sandbox's own tmpfs,
// fresh for every run (a session's restart included), never a host tree.
func listen(uid, gid int) (*os.File, error) {
	dir := filepath.Dir(Socket)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("making the engine's socket: %w", err)
	}
	// In network mode proxy the plan made the directory, a tmpfs of the
	// user's holding the denials file: it becomes the launcher's.
	if err := os.Chown(dir, os.Getuid(), os.Getgid()); err != nil {
		return nil, fmt.Errorf("making the engine's socket: %w", err)
	}
	if err := os.WriteFile(ClientConf, []byte(clientConf()), 0o644); err != nil {
		return nil, fmt.Errorf("writing the client's configuration: %w", err)
	}
	os.Remove(Socket)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: Socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("making the engine's socket: %w", err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chown(Socket, uid, gid); err != nil {
		return nil, fmt.Errorf("making the engine's socket: %w", err)
	}
	if err := os.Chmod(Socket, 0o600); err != nil {
		return nil, fmt.Errorf("making the engine's socket: %w", err)
	}
	f, err := l.File()
	l.Close()
	if err != nil {
		return nil, fmt.Errorf("making the engine's socket: %w", err)
	}
	return f, nil
}
