package sandbox

import (
	"fmt"
	"os"

	"github.com/stockade-dev/stockade/internal/accounts"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Config is the resolved, host-side description of one sandbox.
type Config struct {
	ID         string
	Workdir    string   // mounted read-write; the command starts here
	Home       string   // $HOME inside
	HomeSource string   // persistent sandbox HOME on the host
	RO, RW     []string // extra binds
	Protect    []string // patterns, see mount.Config
	Mask       []string
	Unmask     []string // exempt from Mask, even from a glob
	Argv       []string
	Env        []string
	TTY        bool
	MaxProcs   int64 // see ExecSpec.MaxProcs
	// Proxy gives the sandbox the proxy listeners and points its DNS at
	// the stub on 127.0.0.1 (network mode "proxy").
	Proxy bool
	// Slurm adds the Slurm chaperon's listener (with Proxy).
	Slurm bool
	// SystemHide are paths of the system trees masked inside
	// (mount.Config.SystemHide).
	SystemHide []string
	// HomeProtect are files under the sandbox HOME kept read-only inside.
	HomeProtect []string
	// TmpfsSize bounds the writable tmpfs mounts together (mount.Config).
	TmpfsSize int64
	// Hold are the Mask patterns whose missing instances get placeholders
	// (mount.Config.Hold).
	Hold []string
	// NoHold are the Protect patterns that get no placeholder
	// (mount.Config.NoHold).
	NoHold []string
	// Passwd and Group replace /etc/passwd and /etc/group inside
	// (mount.Config; see Accounts).
	Passwd, Group string
	// SocketDirs are host directories of sockets the supervisor serves
	// (the SSH agent filter's, gh's), which the sandbox sees read-only: it
	// can connect to the sockets, and neither remove nor replace them.
	SocketDirs []SocketDir
	// DenialsAt is where the sandbox sees the file of its run's denials,
	// which init makes and Options.OnFeed receives (mount.Config); "":
	// none.
	DenialsAt string
	// GitConfig is the sanitized git configuration put at .gitconfig in
	// the sandbox HOME (mount.Config); "": none.
	GitConfig string
	// GitExclude is the file of placeholders the sandbox's git leaves
	// out (mount.Config); "": none.
	GitExclude string
	// Scan, when set, is the scan of the trees the plan is made from
	// (mount.ScanTrees; with placeholders that are yet to be made already
	// in it: Scan.Hold); else NewSpec scans.
	Scan *mount.Scan
	// Tun gives the view /dev/net/tun, for a container engine
	// (mount.Config.Tun).
	Tun bool
}

// SocketDir is a directory of sockets served from the host.
type SocketDir struct {
	Source string // on the host: a private directory the supervisor made
	Target string // inside (sandboxnet)
	Why    string // the flag that asked for it
}

// MountConfig is the mount planner's part of c.
func (c Config) MountConfig() mount.Config {
	var services []mount.Mount
	for _, d := range c.SocketDirs {
		services = append(services, mount.Mount{Kind: mount.Bind, Source: d.Source, Target: d.Target,
			ReadOnly: true, IsDir: true, Why: d.Why})
	}
	return mount.Config{Services: services,
		Workdir: c.Workdir, Home: c.Home, HomeSource: c.HomeSource,
		RO: c.RO, RW: c.RW, Protect: c.Protect, Mask: c.Mask, Unmask: c.Unmask,
		ResolvConf: resolvConf(c.Proxy), HomeProtect: c.HomeProtect, Hold: c.Hold, NoHold: c.NoHold,
		TmpfsSize: c.TmpfsSize, Passwd: c.Passwd, Group: c.Group, Tun: c.Tun,
		DenialsAt: c.DenialsAt, GitConfig: c.GitConfig,
		GitExclude: c.GitExclude, SystemHide: c.SystemHide,
	}
}

// systemExec are the trees whose binaries may run.
var systemExec = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// NewSpec plans the sandbox for c.
func NewSpec(c Config, host mount.Host) (Spec, error) {
	mc := c.MountConfig()
	var plan mount.Plan
	var err error
	if c.Scan != nil {
		plan, err = mount.BuildScan(mc, *c.Scan, host)
	} else {
		plan, err = mount.Build(mc, host)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("planning the filesystem view: %w", err)
	}
	tiers := landlock.Tiers{
		ReadOnly:    []string{"/"},
		WriteNoExec: []string{"/dev", "/proc", "/run", "/var"},
		WriteExec:   []string{"/tmp", "/var/tmp", c.Workdir},
	}
	for _, d := range systemExec {
		if _, err := host.Lstat(d); err == nil {
			tiers.ReadExec = append(tiers.ReadExec, d)
		}
	}
	tiers.ReadExec = append(tiers.ReadExec, c.RO...)
	if c.HomeSource != "" {
		tiers.WriteExec = append(tiers.WriteExec, c.Home)
	}
	tiers.WriteExec = append(tiers.WriteExec, c.RW...)
	return Spec{
		Listen:   c.Proxy,
		Slurm:    c.Proxy && c.Slurm,
		ID:       c.ID,
		Hostname: "stockade-" + c.ID,
		Plan:     plan,
		Exec: ExecSpec{
			Argv:     c.Argv,
			Env:      c.Env,
			Cwd:      c.Workdir,
			TTY:      c.TTY,
			Landlock: tiers,
			MaxProcs: c.MaxProcs,
		},
	}, nil
}

// resolvConf points the sandbox's resolver at the DNS stub.
func resolvConf(proxy bool) string {
	if !proxy {
		return ""
	}
	return "# stockade: names resolve through the supervisor's DNS stub, which\n" +
		"# answers only names the session's policy allows.\nnameserver " + sandboxnet.Host + "\noptions timeout:2 attempts:2\n"
}

// Accounts are the sandbox's /etc/passwd and /etc/group for the calling
// user: the host's, filtered (package accounts); empty when the host's
// cannot be read, and then the host's are bound as they are.
func Accounts() (passwd, group string) {
	pw, err1 := os.ReadFile("/etc/passwd")
	gr, err2 := os.ReadFile("/etc/group")
	if err1 != nil || err2 != nil {
		return "", ""
	}
	return accounts.Filter(pw, gr, os.Getuid(), os.Getgid())
}
