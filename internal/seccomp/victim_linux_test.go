package seccomp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// victimEnv names the case a re-executed test binary runs as a victim: it
// installs Default() on itself, makes one call, and exits 0 when the call
// got the expected answer. A filter cannot be removed, so every case gets a
// process of its own.
const victimEnv = "STOCKADE_SECCOMP_VICTIM"

func TestMain(m *testing.M) {
	if name := os.Getenv(victimEnv); name != "" {
		os.Exit(runVictim(name))
	}
	os.Exit(m.Run())
}

// victimCase is one call made under the installed filter. want is the errno
// the call must fail with (0: it must succeed); killed means the process must
// die of SIGSYS instead.
type victimCase struct {
	name   string
	want   syscall.Errno
	killed bool
	amd64  bool // run only on amd64
	call   func() error
}

func errnoErr(_, _ uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

func socketCall(domain, typ, proto int) func() error {
	return func() error {
		fd, err := unix.Socket(domain, typ, proto)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
}

// ioctlDevNull issues cmd on /dev/null. Without the filter the driver would
// answer ENOTTY; seccomp answers before any driver sees the call.
func ioctlDevNull(cmd uint64) func() error {
	return func() error {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer f.Close()
		var c byte = 'x'
		return errnoErr(unix.Syscall(unix.SYS_IOCTL, f.Fd(), uintptr(cmd), uintptr(unsafe.Pointer(&c))))
	}
}

// mknodTemp makes a node of the given mode in a fresh directory.
func mknodTemp(mode uint32) func() error {
	return func() error {
		dir, err := os.MkdirTemp("", "stockade-seccomp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		return unix.Mknodat(unix.AT_FDCWD, filepath.Join(dir, "node"), mode|0o600, int(unix.Mkdev(1, 3)))
	}
}

var victimCases = []victimCase{
	// unshare and clone arguments that only the filter can turn into EPERM:
	// the clone flags are invalid (CLONE_THREAD without CLONE_SIGHAND), so
	// even without a filter no child could be created.
	{name: "unshare(CLONE_NEWUSER)", want: unix.EPERM, call: func() error { return unix.Unshare(unix.CLONE_NEWUSER) }},
	{name: "unshare(CLONE_NEWNS)", want: unix.EPERM, call: func() error { return unix.Unshare(unix.CLONE_NEWNS) }},
	{name: "clone(CLONE_NEWUSER)", want: unix.EPERM, call: func() error {
		return errnoErr(unix.RawSyscall(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_THREAD, 0, 0))
	}},
	{name: "clone3", want: unix.ENOSYS, call: func() error { return errnoErr(unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)) }},
	{name: "setns", want: unix.EPERM, call: func() error { return unix.Setns(-1, 0) }},
	{name: "mount", want: unix.EPERM, call: func() error { return unix.Mount("none", "/nonexistent-stockade", "tmpfs", 0, "") }},
	{name: "chroot", want: unix.EPERM, call: func() error { return unix.Chroot("/") }},
	{name: "socket(AF_PACKET)", want: unix.EPERM, call: socketCall(unix.AF_PACKET, unix.SOCK_RAW, 0)},
	{name: "socket(AF_VSOCK)", want: unix.EPERM, call: socketCall(unix.AF_VSOCK, unix.SOCK_STREAM, 0)},
	{name: "socket(AF_INET, SOCK_RAW)", want: unix.EPERM, call: socketCall(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)},
	{name: "socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)", want: unix.EPERM, call: socketCall(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)},
	{name: "ioctl(TIOCSTI)", want: unix.EPERM, call: ioctlDevNull(unix.TIOCSTI)},
	{name: "ioctl(TIOCSTI|1<<32)", want: unix.EPERM, call: ioctlDevNull(1<<32 | unix.TIOCSTI)},
	{name: "ioctl(TIOCLINUX)", want: unix.EPERM, call: ioctlDevNull(unix.TIOCLINUX)},
	{name: "ioctl(TCGETS)", want: unix.ENOTTY, call: ioctlDevNull(unix.TCGETS)}, // allowed: the driver answers
	{name: "ptrace(PTRACE_TRACEME)", want: unix.EPERM, call: func() error {
		return errnoErr(unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0))
	}},
	{name: "bpf", want: unix.EPERM, call: func() error { return errnoErr(unix.Syscall(unix.SYS_BPF, 0, 0, 0)) }},
	{name: "io_uring_setup", want: unix.EPERM, call: func() error { return errnoErr(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)) }},
	{name: "keyctl", want: unix.EPERM, call: func() error {
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		return err
	}},
	{name: "personality(READ_IMPLIES_EXEC)", want: unix.EPERM, call: func() error {
		return errnoErr(unix.Syscall(unix.SYS_PERSONALITY, 0x0400000, 0, 0)) // READ_IMPLIES_EXEC
	}},
	{name: "personality(query)", call: func() error { return errnoErr(unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)) }},
	{name: "prctl(PR_SET_PTRACER)", want: unix.EPERM, call: func() error { return unix.Prctl(unix.PR_SET_PTRACER, 0, 0, 0, 0) }},
	{name: "mknodat(S_IFCHR)", want: unix.EPERM, call: mknodTemp(unix.S_IFCHR)},
	{name: "mknodat(S_IFIFO)", call: mknodTemp(unix.S_IFIFO)},
	{name: "sendto(MSG_OOB)", want: unix.EPERM, call: func() error { return sendPair(unix.MSG_OOB) }},
	{name: "sendto", call: func() error { return sendPair(0) }},
	{name: "modify_ldt", want: unix.EPERM, amd64: true, call: rawCall(uintptr(amd64Numbers()["modify_ldt"]), 0, 0, 0)},
	{name: "kcmp", want: unix.EPERM, call: func() error {
		const kcmpVM = 1
		pid := uintptr(unix.Getpid())
		return errnoErr(unix.Syscall6(unix.SYS_KCMP, pid, pid, kcmpVM, 0, 0, 0))
	}},
	{name: "process_madvise", want: unix.EPERM, call: rawCall(unix.SYS_PROCESS_MADVISE, 0, 0, 0)},
	{name: "remap_file_pages", want: unix.EPERM, call: rawCall(unix.SYS_REMAP_FILE_PAGES, 0, 0, 0)},
	{name: "memfd_secret", want: unix.EPERM, call: rawCall(unix.SYS_MEMFD_SECRET, 0, 0, 0)},
	{name: "vmsplice", want: unix.EPERM, call: rawCall(unix.SYS_VMSPLICE, 0, 0, 0)},
	{name: "set_mempolicy(MPOL_DEFAULT)", want: unix.EPERM, call: rawCall(unix.SYS_SET_MEMPOLICY, 0, 0, 0)},
	{name: "move_pages", want: unix.EPERM, call: func() error {
		return errnoErr(unix.Syscall6(unix.SYS_MOVE_PAGES, 0, 0, 0, 0, 0, 0))
	}},
	{name: "mq_open", want: unix.EPERM, call: func() error {
		name, _ := unix.BytePtrFromString("stockade-victim")
		return errnoErr(unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_RDONLY, 0, 0, 0, 0))
	}},
	{name: "ioctl(FS_IOC_FIEMAP)", want: unix.EPERM, call: fiemapTemp},
	{name: "ioctl(LOOP_GET_STATUS64)", want: unix.EPERM, call: ioctlDevNull(unix.LOOP_GET_STATUS64)},
	{name: "ioctl(LOOP_GET_STATUS64|1<<32)", want: unix.EPERM, call: ioctlDevNull(1<<32 | unix.LOOP_GET_STATUS64)},
	{name: "ioctl(FS_IOC_ENABLE_VERITY)", want: unix.EPERM, call: ioctlDevNull(unix.FS_IOC_ENABLE_VERITY)},
	{name: "ioctl(FS_IOC_FSGETXATTR)", want: unix.ENOTTY, call: ioctlDevNull(fsIocFSGetXattr)}, // allowed: the driver answers
	{name: "ioctl(FICLONE, -1)", want: unix.EBADF, call: func() error { // allowed: the kernel looks at the fd
		f, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer f.Close()
		return errnoErr(unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.FICLONE, 0xffffffff))
	}},
	{name: "recvmsg(MSG_OOB)", want: unix.EPERM, call: rawCall(unix.SYS_RECVMSG, 0, 0, unix.MSG_OOB)},
	{name: "x32 getpid", killed: true, amd64: true, call: func() error {
		return errnoErr(unix.RawSyscall(0x40000000|unix.SYS_GETPID, 0, 0, 0))
	}},
	{name: "ordinary work", call: ordinaryWork},
}

// engineVictimCases are made under the engine's profile (Engine): what the
// engine needs works, the exploit primitives do not.
var engineVictimCases = []victimCase{
	{name: "bpf", want: unix.EPERM, call: func() error { return errnoErr(unix.Syscall(unix.SYS_BPF, 0, 0, 0)) }},
	{name: "io_uring_setup", want: unix.EPERM, call: func() error { return errnoErr(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)) }},
	{name: "io_uring_register", want: unix.EPERM, call: rawCall(unix.SYS_IO_URING_REGISTER, ^uintptr(0), 0, 0)},
	{name: "perf_event_open", want: unix.EPERM, call: func() error {
		return errnoErr(unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0))
	}},
	{name: "userfaultfd", want: unix.EPERM, call: rawCall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0)},
	{name: "kexec_load", want: unix.EPERM, call: rawCall(unix.SYS_KEXEC_LOAD, 0, 0, 0)},
	{name: "init_module", want: unix.EPERM, call: rawCall(unix.SYS_INIT_MODULE, 0, 0, 0)},
	{name: "finit_module", want: unix.EPERM, call: rawCall(unix.SYS_FINIT_MODULE, ^uintptr(0), 0, 0)},
	{name: "delete_module", want: unix.EPERM, call: rawCall(unix.SYS_DELETE_MODULE, 0, 0, 0)},
	{name: "keyctl", want: unix.ENOSYS, call: func() error {
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		return err
	}},
	{name: "add_key", want: unix.ENOSYS, call: rawCall(unix.SYS_ADD_KEY, 0, 0, 0)},
	{name: "request_key", want: unix.ENOSYS, call: rawCall(unix.SYS_REQUEST_KEY, 0, 0, 0)},
	{name: "open_by_handle_at", want: unix.EPERM, call: rawCall(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0)},
	// What the engine does: a user and a mount namespace, a mount in them
	// (by a child: a threaded process cannot unshare its user namespace).
	{name: "user and mount namespace, mount", call: func() error {
		cmd := exec.Command("/bin/mount", "-t", "tmpfs", "none", os.TempDir())
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}},
	{name: "ordinary work", call: ordinaryWork},
}

// rawCall makes system call nr with three arguments the filter decides on
// before the kernel reads them.
func rawCall(nr, a0, a1, a2 uintptr) func() error {
	return func() error { return errnoErr(unix.Syscall(nr, a0, a1, a2)) }
}

// fiemapTemp asks for the extents of a new file: on most filesystems the
// kernel would answer, so only the filter can make it fail with EPERM.
func fiemapTemp() error {
	f, err := os.CreateTemp("", "stockade-seccomp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const fiemap = 0xc020660b // FS_IOC_FIEMAP
	var req [32]uint64        // struct fiemap, room for one extent
	req[1] = ^uint64(0)       // fm_length: the whole file
	return errnoErr(unix.Syscall(unix.SYS_IOCTL, f.Fd(), fiemap, uintptr(unsafe.Pointer(&req))))
}

func sendPair(flags int) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	return unix.Sendto(fds[0], []byte("x"), flags, nil)
}

// ordinaryWork is what an agent's tools do all day; none of it may break.
func ordinaryWork() error {
	if unix.Getpid() != os.Getpid() {
		return errors.New("getpid disagrees with os.Getpid")
	}
	if _, err := os.ReadFile("/proc/self/status"); err != nil {
		return err
	}
	f, err := os.CreateTemp("", "stockade-seccomp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteString("hello"); err != nil {
		return err
	}
	for _, s := range [][3]int{
		{unix.AF_INET, unix.SOCK_STREAM, 0}, {unix.AF_INET6, unix.SOCK_DGRAM, 0},
		{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0}, {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
	} {
		if err := socketCall(s[0], s[1], s[2])(); err != nil && err != unix.EAFNOSUPPORT {
			return fmt.Errorf("socket%v: %w", s, err)
		}
	}
	if err := newThreads(8); err != nil {
		return err
	}
	// fork+exec (clone with CLONE_VFORK|CLONE_VM) of a Go program, which
	// then starts its runtime under the inherited filter.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{victimEnv + "="}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("running a child: %w: %s", err, out)
	}
	return nil
}

// newThreads makes the runtime clone n new OS threads: each goroutine locks
// its own thread and waits until all are running. A denied thread clone is
// a fatal runtime error, which fails the victim.
func newThreads(n int) error {
	tids := make(chan int)
	release := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	seen := map[int]bool{unix.Gettid(): true}
	for range n {
		seen[<-tids] = true
	}
	close(release)
	if len(seen) != n+1 {
		return fmt.Errorf("%d goroutines locked to threads ran on %d distinct threads", n, len(seen)-1)
	}
	return nil
}

// victimSets are the cases of each profile a victim installs, by the
// prefix of the case's name in victimEnv.
var victimSets = []struct {
	prefix  string
	profile func() Profile
	cases   []victimCase
}{
	{"", Default, victimCases},
	{"engine/", Engine, engineVictimCases},
}

// runVictim installs the case's profile on this process and runs the case;
// it returns the exit status.
func runVictim(name string) int {
	var c *victimCase
	var profile func() Profile
	for _, set := range victimSets {
		for i := range set.cases {
			if set.prefix+set.cases[i].name == name {
				c, profile = &set.cases[i], set.profile
			}
		}
	}
	if c == nil {
		fmt.Fprintf(os.Stderr, "victim: no case %q\n", name)
		return 2
	}
	runtime.LockOSThread()
	if err := install(profile()); err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 2
	}
	err := c.call()
	if c.killed {
		fmt.Fprintf(os.Stderr, "victim: %s: survived (%v), want death by SIGSYS\n", name, err)
		return 1
	}
	var got syscall.Errno
	if err != nil && !errors.As(err, &got) {
		fmt.Fprintf(os.Stderr, "victim: %s: %v, want errno %d\n", name, err, c.want)
		return 1
	}
	if got != c.want {
		fmt.Fprintf(os.Stderr, "victim: %s: errno %d (%v), want %d (%v)\n", name, got, got, c.want, c.want)
		return 1
	}
	return 0
}

func install(p Profile) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	arch, err := NativeArch()
	if err != nil {
		return err
	}
	prog, err := Compile(p, arch)
	if err != nil {
		return err
	}
	if err := Install(prog); err != nil {
		return err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	if !strings.Contains(string(status), "Seccomp:\t2\n") {
		return errors.New("installed a filter but /proc/self/status does not show seccomp mode 2")
	}
	return nil
}

// TestVictim runs every victim case in a process of its own and checks how
// it ended. It skips only when the kernel has no seccomp filters, and fails
// instead when STOCKADE_MUST_WORK=1.
func TestVictim(t *testing.T) {
	if err := probeSeccomp(); err != nil {
		testenv.SkipOrFail(t, "kernel lacks seccomp filters: %v", err)
	}
	for _, set := range victimSets {
		for _, c := range set.cases {
			if c.amd64 && runtime.GOARCH != "amd64" {
				continue
			}
			runVictimCase(t, set.prefix+c.name, c)
		}
	}
}

func runVictimCase(t *testing.T, name string, c victimCase) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), victimEnv+"="+name)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case c.killed:
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != unix.SIGSYS {
				t.Errorf("victim ended with %v, want death by SIGSYS\n%s", err, out)
			}
		case err != nil:
			t.Errorf("victim: %v\n%s", err, out)
		}
	})
}

// probeSeccomp asks the kernel whether it has seccomp filters and the
// KILL_PROCESS action the filter relies on (Linux 4.14).
func probeSeccomp() error {
	action := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	return errnoErr(unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action))))
}
