//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel attack surface: the syscalls and ioctls that seccomp must refuse. Each
// attempt uses harmless arguments, so that if the sandbox let it through on a
// root-run test machine, nothing would be damaged (CAD off, sync quotas, NULL acct).
func init() {
	register("unshare", 1, func(a []string) error {
		f, err := cloneFlag(a[0])
		if err != nil {
			return err
		}
		return unix.Unshare(f)
	})
	register("clone", 1, cloneExec)
	register("clone3", 1, clone3)
	register("setns", 1, func(a []string) error {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Setns(fd, 0)
	})
	register("bpf", 0, func([]string) error {
		// BPF_MAP_CREATE of a one-entry array: the smallest valid bpf() call.
		attr := [18]uint32{2, 4, 4, 1}
		return rawFD(unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)))
	})
	register("io-uring", 0, func([]string) error {
		var params [30]uint32
		return rawFD(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0))
	})
	register("userfaultfd", 0, func([]string) error {
		const uffdUserModeOnly = 1
		return rawFD(unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|uffdUserModeOnly, 0, 0))
	})
	register("perf-event-open", 0, func([]string) error {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	register("keyctl", 0, func([]string) error {
		_, err := unix.KeyctlJoinSessionKeyring("stockade-escape")
		return err
	})
	register("add-key", 0, func([]string) error {
		_, err := unix.AddKey("user", "stockade-escape", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		return err
	})
	register("request-key", 0, func([]string) error {
		_, err := unix.RequestKey("user", "stockade-escape", "", unix.KEY_SPEC_PROCESS_KEYRING)
		return err
	})
	register("kexec-load", 0, func([]string) error {
		_, _, e := unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0, 0, 0)
		return errnoOf(e)
	})
	register("kexec-file-load", 0, func([]string) error {
		const kexecFileNoInitramfs = 4
		_, _, e := unix.Syscall6(unix.SYS_KEXEC_FILE_LOAD, ^uintptr(0), ^uintptr(0), 1,
			uintptr(unsafe.Pointer(&[]byte{0}[0])), kexecFileNoInitramfs, 0)
		return errnoOf(e)
	})
	register("init-module", 0, func([]string) error {
		return unix.InitModule([]byte{0}, "")
	})
	register("finit-module", 0, func([]string) error {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.FinitModule(fd, "", 0)
	})
	register("delete-module", 0, func([]string) error {
		return unix.DeleteModule("stockade_escape_none", unix.O_NONBLOCK)
	})
	register("personality", 1, func(a []string) error { return personality(a[0], 0) })
	register("personality-hibits", 1, func(a []string) error { return personality(a[0], 1<<32) })
	register("syslog", 0, func([]string) error {
		buf := make([]byte, 4096)
		_, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
		return err
	})
	register("reboot", 0, func([]string) error { return unix.Reboot(unix.LINUX_REBOOT_CMD_CAD_OFF) })
	register("swapon", 0, func([]string) error {
		p, _ := unix.BytePtrFromString("/dev/null")
		_, _, e := unix.Syscall(unix.SYS_SWAPON, uintptr(unsafe.Pointer(p)), 0, 0)
		return errnoOf(e)
	})
	register("acct", 0, func([]string) error { // NULL: turn accounting off
		_, _, e := unix.Syscall(unix.SYS_ACCT, 0, 0, 0)
		return errnoOf(e)
	})
	register("settimeofday", 0, func([]string) error {
		var tv unix.Timeval
		if err := unix.Gettimeofday(&tv); err != nil {
			return err
		}
		return unix.Settimeofday(&tv)
	})
	register("clock-settime", 0, func([]string) error {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
			return err
		}
		_, _, e := unix.Syscall(unix.SYS_CLOCK_SETTIME, unix.CLOCK_REALTIME, uintptr(unsafe.Pointer(&ts)), 0)
		return errnoOf(e)
	})
	register("sethostname", 0, func([]string) error { return unix.Sethostname([]byte("escaped")) })
	register("quotactl", 0, func([]string) error { // Q_SYNC of every filesystem
		const qSync = 0x800001
		_, _, e := unix.Syscall6(unix.SYS_QUOTACTL, qSync<<8, 0, 0, 0, 0, 0)
		return errnoOf(e)
	})
	register("fanotify", 0, func([]string) error {
		fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF, unix.O_RDONLY)
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	register("vhangup", 0, func([]string) error {
		_, _, e := unix.Syscall(unix.SYS_VHANGUP, 0, 0, 0)
		return errnoOf(e)
	})
	register("tiocsti", 0, func([]string) error { return onPTY("tiocsti-inner", "0") })
	register("tiocsti-hibits", 0, func([]string) error { return onPTY("tiocsti-inner", "1") })
	register("tiocsti-inner", 1, func(a []string) error {
		cmd := uintptr(unix.TIOCSTI)
		if a[0] == "1" {
			cmd |= 1 << 32 // the kernel truncates ioctl's cmd to 32 bits
		}
		c := byte('#')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, cmd, uintptr(unsafe.Pointer(&c)))
		return errnoOf(e)
	})
	register("tioclinux", 0, func([]string) error {
		fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sub := byte(12) // TIOCL_GETSHIFTSTATE: a read-only subcode
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCLINUX, uintptr(unsafe.Pointer(&sub)))
		return errnoOf(e)
	})
	register("x32-syscall", 0, func([]string) error { return viaChild(nil, "x32-inner") })
	register("x32-inner", 0, func([]string) error {
		const x32Bit = 0x40000000
		_, _, e := unix.RawSyscall(unix.SYS_GETPID|x32Bit, 0, 0, 0)
		return errnoOf(e)
	})
}

func cloneFlag(name string) (int, error) {
	flags := map[string]int{
		"user": unix.CLONE_NEWUSER, "mount": unix.CLONE_NEWNS, "net": unix.CLONE_NEWNET,
		"pid": unix.CLONE_NEWPID, "ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS,
		"cgroup": unix.CLONE_NEWCGROUP, "time": unix.CLONE_NEWTIME,
	}
	f, ok := flags[name]
	if !ok {
		return 0, fmt.Errorf("unknown namespace %q", name)
	}
	return f, nil
}

// cloneExec uses clone(2) (not unshare) to start /bin/true in a new namespace.
func cloneExec(a []string) error {
	f, err := cloneFlag(a[0])
	if err != nil {
		return err
	}
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Cloneflags: uintptr(f)},
	})
	if err != nil {
		return err
	}
	var ws syscall.WaitStatus
	_, err = syscall.Wait4(pid, &ws, 0, nil)
	return err
}

// clone3 calls clone3(2) directly; should it ever succeed, the child leaves at once.
func clone3(a []string) error {
	f, err := cloneFlag(a[0])
	if err != nil {
		return err
	}
	args := struct{ flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64 }{
		flags: uint64(f), exitSignal: uint64(unix.SIGCHLD),
	}
	r, _, e := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	if e != 0 {
		return e
	}
	if r == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	_, err = unix.Wait4(int(r), &ws, 0, nil)
	return err
}

func personality(val string, hi uintptr) error {
	v, err := strconv.ParseUint(val, 0, 32)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall(unix.SYS_PERSONALITY, uintptr(v)|hi, 0, 0)
	return errnoOf(e)
}

// onPTY runs the probe's own inner action in a child whose controlling terminal is
// a fresh pty, so that TIOCSTI is refused only by the sandbox, not by the kernel's
// "not your controlling tty" check.
func onPTY(inner ...string) error {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		return err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	return viaChild(func(c *exec.Cmd) {
		c.Stdin = s
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, inner...)
}

// viaChild re-runs the probe with args and relays the child's result line; a child
// killed by a signal (seccomp's kill action) is reported as DENIED SIG<name>.
func viaChild(setup func(*exec.Cmd), args ...string) error {
	c := exec.Command("/proc/self/exe", args...)
	c.Stderr = os.Stderr
	if setup != nil {
		setup(c)
	}
	t := time.AfterFunc(10*time.Second, func() { c.Process.Kill() })
	defer t.Stop()
	out, err := c.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return denial(unix.SignalName(ws.Signal()))
		}
	}
	if err != nil {
		return fmt.Errorf("child %v: %w (output %q)", args, err, out)
	}
	fmt.Print(string(out))
	os.Exit(0)
	return nil
}

// rawFD turns a raw syscall that returns a new fd into an error, closing the fd.
func rawFD(r, _ uintptr, e unix.Errno) error {
	if e != 0 {
		return e
	}
	unix.Close(int(r))
	return nil
}
