package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/cgroup"
	"github.com/stockade-dev/stockade/internal/engine"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/sandbox"
)

type doctorCmd struct {
	policyFlags
	Containers bool `help:"Also check what --containers needs (podman, subordinate ids), and fail without it."`
}

func (c *doctorCmd) Help() string {
	return "Checks each kernel feature the sandbox needs, then starts a real sandbox running /bin/true.\nExits 1 when stockade cannot run here or its configuration (a config file,\na STOCKADE_* variable) is broken; every failure comes with its fix."
}

// check is one line of the doctor's report.
type check struct {
	name, detail, fix string
	ok                bool
	optional          bool // a failure is reported, not counted
}

func (c *doctorCmd) Run() error {
	var checks []check
	add := func(ch check) { checks = append(checks, ch) }
	var config error // the configuration's own failure, if any

	var u unix.Utsname
	unix.Uname(&u)
	add(check{name: "kernel", ok: true, detail: "Linux " + unix.ByteSliceToString(u.Release[:])})
	add(userNSCheck())
	abi := landlock.ABI()
	if err := landlock.CheckABI(abi); err != nil {
		add(check{name: "landlock", detail: fmt.Sprintf("ABI %d", abi), fix: err.Error()})
	} else {
		add(check{name: "landlock", ok: true, detail: fmt.Sprintf("ABI %d", abi)})
	}
	if err := seccompAvailable(); err != nil {
		add(check{name: "seccomp", detail: err.Error(), fix: "use a kernel built with CONFIG_SECCOMP_FILTER=y"})
	} else {
		add(check{name: "seccomp", ok: true, detail: "filter mode available"})
	}
	r, home, err := c.resolve()
	if ue := (usageError{}); errors.As(err, &ue) {
		return err // the flags given to doctor itself
	}
	var e *enforcement
	if err != nil {
		// A config file or STOCKADE_* variable that does not load: the
		// machine may be fine, the configuration is not.
		config = err
		add(check{name: "configuration", detail: err.Error(), fix: "correct the file or variable named above, or move the file aside"})
	} else {
		rep := cgroup.Probe(limitsOf(r))
		en := enforcementOf(r, home, rep)
		e = &en
		add(homeCheck(r.Policy, home))
		if err := rep.Refusal(requirements(r)); err != nil {
			add(check{name: "limits", detail: err.Error()})
		}
	}
	add(containersCheck(c.Containers))
	if off, err := sandbox.Smoke(); err != nil {
		add(check{name: "sandbox", detail: "starting /bin/true: " + err.Error(), fix: "see the failing check above"})
	} else {
		add(check{name: "sandbox", ok: true, detail: "started /bin/true in a full sandbox"})
		add(captureCheck(off))
	}

	failed := 0
	for _, ch := range checks {
		state := "ok  "
		switch {
		case !ch.ok && ch.optional:
			state = "n/a "
		case !ch.ok:
			state = "FAIL"
			failed++
		}
		fmt.Printf("%s  %-16s %s\n", state, ch.name, ch.detail)
		if ch.fix != "" {
			fmt.Printf("      %-16s fix: %s\n", "", ch.fix)
		}
	}
	if e != nil {
		fmt.Println()
		e.print(os.Stdout)
	}
	if config != nil {
		failed--
	}
	if failed > 0 {
		fmt.Printf("\nstockade cannot run on this machine: %d check(s) failed.\n", failed)
	}
	if config != nil {
		fmt.Printf("\nstockade's configuration is broken: %v\n", config)
	}
	if failed > 0 || config != nil {
		return exitError{1}
	}
	fmt.Println("\nstockade can run on this machine.")
	return nil
}

// captureCheck reports the transparent capture of the sandbox's TCP
// (package capture): without it a run goes on, and programs that ignore
// the proxy variables cannot connect out.
func captureCheck(off error) check {
	if off != nil {
		return check{name: "capture", detail: off.Error(), optional: true,
			fix: "load the nft_nat and nft_redir modules (modprobe), or use a kernel with CONFIG_NFT_NAT and CONFIG_NFT_REDIR; until then only programs that use HTTP_PROXY or ALL_PROXY reach the network"}
	}
	return check{name: "capture", ok: true, detail: "nftables redirects the sandbox's TCP to the egress policy"}
}

// containersCheck says whether --containers can run here; required makes a
// failure count.
func containersCheck(required bool) check {
	if _, err := engine.Check(); err != nil {
		var m *engine.Missing
		if errors.As(err, &m) {
			return check{name: "containers", detail: "--containers needs " + m.What, fix: m.Fix, optional: !required}
		}
		return check{name: "containers", detail: err.Error(), optional: !required}
	}
	return check{name: "containers", ok: true, detail: "podman, crun, /dev/net/tun and subordinate ids for --containers"}
}

// userNSCheck explains why user namespaces are unavailable, when they are.
func userNSCheck() check {
	err := sandbox.ProbeNamespaces()
	if err == nil {
		return check{name: "user namespaces", ok: true, detail: "can create user, mount, pid, net, ipc, uts and cgroup namespaces"}
	}
	ch := check{name: "user namespaces", detail: err.Error()}
	switch {
	case readSysctl("kernel/apparmor_restrict_unprivileged_userns") == "1":
		ch.fix = "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+): allow them for stockade with an AppArmor profile granting 'userns,' to its path, or (system-wide, weaker) sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0"
	case readSysctl("kernel/unprivileged_userns_clone") == "0":
		ch.fix = "unprivileged user namespaces are disabled: sudo sysctl kernel.unprivileged_userns_clone=1"
	case readSysctl("user/max_user_namespaces") == "0":
		ch.fix = "user namespaces are disabled: sudo sysctl user.max_user_namespaces=15000"
	default:
		ch.fix = "use a kernel with CONFIG_USER_NS=y; inside a container, allow unshare/clone of namespaces (e.g. seccomp and AppArmor unconfined)"
	}
	return ch
}

func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
