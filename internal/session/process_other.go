//go:build !linux

package session

import (
	"errors"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// errNotSupported: pidfds and SO_PEERCRED are Linux's.
var errNotSupported = errors.New("sessions need Linux")

// openSupervisor returns errNotSupported.
func openSupervisor(Session) (int, error) { return -1, errNotSupported }

// waitExit does nothing.
func waitExit(int, time.Duration) {}

// terminate returns errNotSupported.
func terminate(int) error { return errNotSupported }

// peerUID reports no peer, so the control socket refuses every client.
func peerUID(*net.UnixConn) (int, bool) { return 0, false }

// peerNested reports nothing: peerUID refuses every client here.
func peerNested(*net.UnixConn) (bool, error) { return true, errNotSupported }

// peerPID returns 0.
func peerPID(*net.UnixConn) int32 { return 0 }

func initHandle(int) int { return -1 }

func signalInit(_, pid int, sig unix.Signal) { unix.Kill(pid, sig) }

func closeHandle(int) {}
