package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/stockade-dev/stockade/internal/ocihook"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// facts are the session's facts for the OCI hooks (package ocihook), in
// the engine's paths and ids: the user is the engine's 0, and a
// container's user namespace maps the engine's ids, line by line.
func (e *Engine) facts() (ocihook.Facts, error) {
	arch, err := seccomp.NativeArch()
	if err != nil {
		return ocihook.Facts{}, err
	}
	profile, err := seccomp.OCI(seccomp.Default(), arch)
	if err != nil {
		return ocihook.Facts{}, err
	}
	return ocihook.Facts{
		Workdir: e.opt.Workdir, Volumes: []string{volumes},
		Storage: storage, RunRoot: runRoot, Driver: driver, Tmp: engineTmp,
		Seccomp: profile, UID: 0, GID: 0,
		UIDs:          ranges(e.host.UIDs.Engine),
		GIDs:          ranges(e.host.GIDs.Engine),
		SealSource:    binary,
		Runtime:       tool("crun"),
		RequireDigest: e.opt.RequireDigest,
	}, nil
}

// ranges are the ids a map maps, in its own ids, one range per line.
func ranges(m []Mapping) []ocihook.IDRange {
	var r []ocihook.IDRange
	for _, l := range m {
		r = append(r, ocihook.IDRange{Start: uint32(l.Inner), Count: uint32(l.Count)})
	}
	return r
}

// eventsSocket is the socket on which the createRuntime hook reports a
// refusal: made here, bound and listened on by the launcher in the engine's
// root, where only the engine's processes reach it; the supervisor accepts
// on its own copy.
func eventsSocket() (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("making the hooks' events socket: %w", os.NewSyscallError("socket", err))
	}
	return os.NewFile(uintptr(fd), "events"), nil
}

// hear passes each report on ln to on, until ln is closed. One report per
// connection, one connection at a time, each bounded in size and time: the
// engine's side may be under the agent's sway.
func hear(ln net.Listener, on func(ocihook.Report)) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		conn.SetDeadline(time.Now().Add(time.Second))
		line, err := bufio.NewReaderSize(conn, ocihook.MaxReport).ReadSlice('\n')
		conn.Close()
		var r ocihook.Report
		if err != nil || json.Unmarshal(line, &r) != nil || r.Check == "" {
			r = ocihook.Report{Check: "unreadable", Reason: "a report the supervisor could not read"}
		}
		if on != nil {
			on(r)
		}
	}
}
