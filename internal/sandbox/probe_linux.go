//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/stockade-dev/stockade/internal/mount"
)

const probeArg = "__stockade_probe"

func init() { Entrypoints[probeArg] = func() int { return 0 } }

// ProbeNamespaces starts this binary in the namespaces of a sandbox and lets
// it exit at once: the cheapest complete test that the kernel allows them.
func ProbeNamespaces() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := exec.Command(self, probeArg)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  cloneFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %v", ErrNoUserNS, err)
	}
	return nil
}

// Smoke runs /bin/true in a complete sandbox with a throwaway workdir and
// the proxy listeners. captureOff is why the kernel refused the capture
// rules, if it did: the sandbox runs without them.
func Smoke() (captureOff, err error) {
	dir, err := os.MkdirTemp("", "stockade-doctor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	wd := filepath.Join(dir, "work")
	if err := os.Mkdir(wd, 0o700); err != nil {
		return nil, err
	}
	spec, err := NewSpec(Config{ID: "doctor", Workdir: wd, Home: "/nonexistent-home", Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
	if err != nil {
		return nil, err
	}
	spec.Listen = true
	code, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull,
		OnCaptureOff: func(err error) { captureOff = err }})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return captureOff, fmt.Errorf("/bin/true exited with status %d", code)
	}
	return captureOff, nil
}
