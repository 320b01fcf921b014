//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// secret is what ptrace and process_vm_readv try to steal from a sibling probe. The
// probe is a static non-PIE binary, so its address is the same in every copy.
var secret = [8]byte{'s', 'e', 'c', 'r', 'e', 't', '4', '2'}

// Processes, credentials and what a process inherits: other processes' memory and
// signals, capabilities, setuid, environment variables and file descriptors.
func init() {
	register("ptrace-traceme", 0, func([]string) error {
		_, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		return errnoOf(e)
	})
	register("ptrace-attach", 1, func(a []string) error {
		return withTarget(a[0], func(pid int) error {
			if err := unix.PtraceAttach(pid); err != nil {
				return err
			}
			return unix.PtraceDetach(pid)
		})
	})
	register("process-vm-readv", 1, func(a []string) error {
		return withTarget(a[0], func(pid int) error {
			var buf [8]byte
			local := []unix.Iovec{{Base: &buf[0], Len: 8}}
			remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&secret[0])), Len: 8}}
			_, err := unix.ProcessVMReadv(pid, local, remote, 0)
			return err
		})
	})
	register("pidfd-getfd", 2, func(a []string) error {
		return withTarget(a[0], func(pid int) error {
			pfd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				return err
			}
			defer unix.Close(pfd)
			n, _ := strconv.Atoi(a[1])
			fd, err := unix.PidfdGetfd(pfd, n, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
	})
	register("kill", 2, func(a []string) error {
		pid, err1 := strconv.Atoi(a[0])
		sig, err2 := strconv.Atoi(a[1])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("kill: bad PID or SIG %q %q", a[0], a[1])
		}
		return unix.Kill(pid, unix.Signal(sig))
	})
	register("pidfd-open", 1, func(a []string) error {
		pid, err := strconv.Atoi(a[0])
		if err != nil {
			return err
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	register("pause", 0, func([]string) error { // the target of ptrace-attach child
		fmt.Println("READY")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
		return nil
	})
	register("setuid", 1, func(a []string) error {
		uid, err := strconv.Atoi(a[0])
		if err != nil {
			return err
		}
		return unix.Setuid(uid)
	})
	register("capset", 0, func([]string) error {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
		data[0].Effective |= 1 << unix.CAP_SYS_ADMIN
		data[0].Permitted |= 1 << unix.CAP_SYS_ADMIN
		return unix.Capset(&hdr, &data[0])
	})
	register("ambient-raise", 0, func([]string) error {
		return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_SYS_ADMIN, 0, 0)
	})
	register("caps", 0, capsHeld)
	register("euid-changed", 1, func(a []string) error { // run through a setuid copy
		if strconv.Itoa(os.Geteuid()) != a[0] {
			return found("euid=" + strconv.Itoa(os.Geteuid()))
		}
		return denial("NOSUID")
	})
	register("env-scan", 0, envScan)
	register("getenv", 1, func(a []string) error {
		if v, ok := os.LookupEnv(a[0]); ok {
			return found(v)
		}
		return denial("NONE")
	})
	register("fd-scan", 0, fdScan)
	register("dumpable", 0, func([]string) error { // is PID 1 (stockade init) readable?
		_, err := os.Readlink("/proc/1/exe")
		return err
	})
}

// withTarget runs fn on PID, or on a fresh sibling probe for "child": a process that
// the sandbox's own uid owns, so only the sandbox can stop the attempt.
func withTarget(arg string, fn func(pid int) error) error {
	if arg != "child" {
		pid, err := strconv.Atoi(arg)
		if err != nil {
			return err
		}
		return fn(pid)
	}
	c := exec.Command("/proc/self/exe", "pause")
	in, err := c.StdinPipe()
	if err != nil {
		return err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("starting the target child: %w", err)
	}
	defer c.Wait()
	defer in.Close()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "READY\n" {
		return fmt.Errorf("target child said %q", line)
	}
	return fn(c.Process.Pid)
}

// capsHeld reports any capability set in /proc/self/status that is not empty.
func capsHeld([]string) error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var held []string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":\t")
		if ok && strings.HasPrefix(k, "Cap") && strings.Trim(v, "0") != "" {
			held = append(held, k+"="+v)
		}
	}
	if len(held) > 0 {
		return found(strings.Join(held, ","))
	}
	return denial("NONE")
}

// credentialMarkers are substrings of variable names that carry secrets.
var credentialMarkers = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL",
	"AWS_", "SSH_", "GH_", "GITHUB_", "CI_", "NPM_", "AUTH"}

func envScan([]string) error {
	var names []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_CONFIG_KEY_") && value == "core.excludesFile" {
			continue // the name of a git setting, stockade's own (docs/sandbox.md, Placeholders)
		}
		for _, m := range credentialMarkers {
			if strings.Contains(strings.ToUpper(name), m) {
				names = append(names, name)
				break
			}
		}
	}
	if len(names) > 0 {
		return found(strings.Join(names, ","))
	}
	return denial("NONE")
}

// fdScan finds descriptors above stderr that the probe did not open itself: anything
// inherited from the host (a secret file, a socket, a terminal) is a leak.
func fdScan([]string) error {
	var open []string
	for fd := 3; fd < 4096; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			continue
		}
		target, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		open = append(open, fmt.Sprintf("%d=%s", fd, target))
	}
	if len(open) > 0 {
		return found(strings.Join(open, ","))
	}
	return denial("NONE")
}
