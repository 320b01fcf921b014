package mount

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Host is the view of the host filesystem the planner needs; os.Lstat and
// os.ReadDir in production, a fake in tests.
type Host interface {
	Lstat(path string) (fs.FileInfo, error)
	Stat(path string) (fs.FileInfo, error)
	ReadDir(path string) ([]fs.DirEntry, error)
	Readlink(path string) (string, error)
}

// OS is the real host filesystem. Its calls resolve paths as the kernel
// does, symlinks included: the planner only reads with them, and what it
// decides is carried out by init, which opens every path of a writable
// tree with RESOLVE_NO_SYMLINKS and checks it is what the plan saw, and by
// the placeholder code, which works from directory descriptors (beneath).
// A link planted between the scan and the mount fails the start.
type OS struct{}

func (OS) Lstat(p string) (fs.FileInfo, error) { return os.Lstat(p) }
func (OS) Stat(p string) (fs.FileInfo, error)  { return os.Stat(p) }

// ReadDir lists p unsorted (the plan is sorted anyway), with getdents.
func (OS) ReadDir(p string) ([]fs.DirEntry, error) { return readDir(p) }
func (OS) Readlink(p string) (string, error)       { return os.Readlink(p) }

// Config is what the planner needs from the policy. Paths are absolute and clean.
type Config struct {
	Workdir    string
	Home       string // where the sandbox HOME appears inside (the user's $HOME path)
	HomeSource string // the persistent sandbox HOME on the host
	RO, RW     []string
	Protect    []string // patterns, relative to each writable root, or absolute
	Mask       []string // patterns, relative to each root, or absolute
	Unmask     []string // exempt from Mask: patterns as in Mask
	// ResolvConf, when set, replaces /etc/resolv.conf inside.
	ResolvConf string
	// Passwd and Group, when set, replace /etc/passwd and /etc/group
	// inside (the host's, filtered: package accounts).
	Passwd, Group string
	// HomeProtect are paths relative to the sandbox HOME kept read-only
	// inside (the agent's guide), when they exist.
	HomeProtect []string
	// Hold are the Mask patterns whose missing instances get a
	// placeholder, as every protected one does: names that host tools read
	// from a project directory (.npmrc, .envrc, .env), which the agent
	// must not be able to plant.
	Hold []string
	// NoHold are the Protect patterns whose missing instances get no
	// placeholder: an empty file there would change what their tool does.
	// What the command creates there is found at exit (Scan.Created).
	NoHold []string
	// Services are binds of host-side services into the sandbox (the SSH
	// agent filter's socket directory), made on the scratch tmpfs mounts.
	Services []Mount
	// DenialsAt, when set, is where the sandbox sees the file of its run's
	// denials (package denial): a Feed mount, read-only, in a small tmpfs
	// of its own: a mount point there cannot be removed, renamed or
	// replaced, and neither can its directory. The file exists only in
	// the sandbox's mount namespace, never on the host.
	DenialsAt string
	// GitConfig, when set, is the sanitized git configuration
	// (--gitconfig) put read-only at .gitconfig in the sandbox HOME. It
	// never lands in the HOME on the host: it is staged, as File mounts are.
	GitConfig string
	// GitExclude, when set, is the content of a read-only file at
	// GitExcludePath that the sandbox's git reads as core.excludesFile
	// (see package job): the placeholders, so that git inside does not
	// list them as untracked nor add them.
	GitExclude string
	// TmpfsSize is how many bytes the writable tmpfs mounts may hold
	// together (see tmpfsShares); 0 leaves each at the kernel's default,
	// half of RAM and as many inodes.
	TmpfsSize int64
	// Tun binds the host's /dev/net/tun too: a container engine's
	// slirp4netns opens it in a container's network namespace, which the
	// engine's user namespace owns (package engine). Opening it makes no
	// interface; TUNSETIFF needs CAP_NET_ADMIN over the network namespace
	// the descriptor is used in, which the command has over none.
	Tun bool
	// SystemHide are more paths of the system trees masked as
	// SystemMasks are, when they exist: the host's Slurm configuration,
	// munge key and Slurm commands in a --slurm sandbox (slurm.Hidden),
	// where the chaperon answers in their place.
	SystemHide []string
}

// SystemDirs are bound read-only from the host when they exist; a symlink
// (merged /usr) is recreated as a symlink.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// SystemMasks hide host secrets that live in the read-only system tree.
var SystemMasks = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/security/opasswd", "/etc/ssh/ssh_host_*_key", "/etc/stockade/stockaderc",
}

// ProcMasks read empty inside: kernel memory, symbol addresses, triggers and
// enumeration aids that an exploit would start from.
var ProcMasks = []string{
	"/proc/kcore", "/proc/kallsyms", "/proc/sysrq-trigger", "/proc/timer_list",
	"/proc/sched_debug", "/proc/keys", "/proc/key-users", "/proc/latency_stats",
	"/proc/modules", "/proc/devices", "/proc/diskstats", "/proc/partitions",
	"/proc/version", "/proc/config.gz", "/proc/kpagecount", "/proc/kpageflags",
	"/proc/kpagecgroup", "/proc/vmallocinfo", "/proc/slabinfo",
	"/proc/acpi/", "/proc/scsi/", "/proc/asound/", "/proc/driver/", "/proc/fs/",
}

// ProcReadOnly are remounted read-only over the fresh procfs.
var ProcReadOnly = []string{"/proc/sys", "/proc/irq", "/proc/bus"}

// Devices are the host device nodes bound into the sandbox's /dev.
var Devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// TunDevice is the node Config.Tun binds.
const TunDevice = "/dev/net/tun"

// Build makes the mount plan for cfg, scanning the trees (ScanTrees).
func Build(cfg Config, host Host) (Plan, error) {
	return BuildScan(cfg, ScanTrees(cfg, host), host)
}

// BuildScan makes the mount plan for cfg from a scan of its trees.
func BuildScan(cfg Config, sc Scan, host Host) (Plan, error) {
	var ms []Mount
	add := func(m Mount) { ms = append(ms, m) }

	for _, d := range SystemDirs {
		fi, err := host.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(d)
			if err != nil {
				return Plan{}, fmt.Errorf("reading symlink %s: %w", d, err)
			}
			add(Mount{Kind: Symlink, Source: link, Target: d, Why: "system"})
		case fi.IsDir():
			add(Mount{Kind: Bind, Source: d, Target: d, ReadOnly: true, IsDir: true, Why: "system"})
		}
	}
	for _, m := range systemMasks(host, SystemMasks, "system secret") {
		add(m)
	}
	for _, m := range systemMasks(host, cfg.SystemHide, "hidden: the Slurm chaperon answers") {
		add(m)
	}

	if cfg.ResolvConf != "" {
		// /etc/resolv.conf is often a symlink into /run: the file goes
		// where the link leads inside.
		add(Mount{Kind: File, Target: resolveBound(host, "/etc/resolv.conf", ms), Data: cfg.ResolvConf, Why: "DNS through the stub"})
	}
	if cfg.Passwd != "" {
		add(Mount{Kind: File, Target: resolveBound(host, "/etc/passwd", ms), Data: cfg.Passwd, Why: "accounts: root, you, nobody"})
	}
	if cfg.Group != "" {
		add(Mount{Kind: File, Target: resolveBound(host, "/etc/group", ms), Data: cfg.Group, Why: "accounts: your groups"})
	}

	// Kernel interfaces.
	add(Mount{Kind: Tmpfs, Target: "/dev", Data: "mode=0755,size=64k,nr_inodes=1024", Why: "devices"})
	for _, d := range Devices {
		add(Mount{Kind: Device, Source: "/dev/" + d, Target: "/dev/" + d, Why: "devices"})
	}
	if cfg.Tun {
		add(Mount{Kind: Device, Source: TunDevice, Target: TunDevice, Why: "the container engine's networks"})
	}
	add(Mount{Kind: Devpts, Target: "/dev/pts", Why: "terminals"})
	add(Mount{Kind: Symlink, Source: "pts/ptmx", Target: "/dev/ptmx", Why: "terminals"})
	add(Mount{Kind: Tmpfs, Target: "/dev/shm", Data: tmpfsData("1777", "/dev/shm", cfg.TmpfsSize), Why: "shared memory"})
	for i, n := range []string{"stdin", "stdout", "stderr"} {
		add(Mount{Kind: Symlink, Source: fmt.Sprintf("/proc/self/fd/%d", i), Target: "/dev/" + n, Why: "devices"})
	}
	add(Mount{Kind: Symlink, Source: "/proc/self/fd", Target: "/dev/fd", Why: "devices"})
	add(Mount{Kind: Proc, Target: "/proc", Why: "processes of this sandbox only"})
	for _, p := range ProcMasks {
		dir := strings.HasSuffix(p, "/")
		ms = append(ms, Mount{Kind: Empty, Target: strings.TrimSuffix(p, "/"), IsDir: dir, Why: "kernel interface", Data: "optional"})
	}
	for _, p := range ProcReadOnly {
		add(Mount{Kind: Bind, Source: p, Target: p, ReadOnly: true, IsDir: true, Why: "kernel interface", Data: "sandbox"})
	}

	// Scratch space.
	add(Mount{Kind: Tmpfs, Target: "/tmp", Data: tmpfsData("1777", "/tmp", cfg.TmpfsSize), Why: "scratch"})
	add(Mount{Kind: Tmpfs, Target: "/run", Data: tmpfsData("0755", "/run", cfg.TmpfsSize), Why: "scratch"})
	add(Mount{Kind: Tmpfs, Target: "/var", Data: tmpfsData("0755", "/var", cfg.TmpfsSize), Why: "scratch"})
	add(Mount{Kind: Dir, Target: "/var/tmp", Mode: 0o1777, Why: "scratch"})
	if cfg.DenialsAt != "" {
		// The directory is a mount point, so it cannot be renamed away
		// with a forged file put in its place; the engine's launcher
		// makes its socket beside the file.
		add(Mount{Kind: Tmpfs, Target: filepath.Dir(cfg.DenialsAt), Data: "mode=0755,size=64k,nr_inodes=64", Why: "stockade's files"})
		add(Mount{Kind: Feed, Target: cfg.DenialsAt, ReadOnly: true, Why: "denials the agent can read"})
	}
	if cfg.GitExclude != "" {
		if cfg.DenialsAt == "" || filepath.Dir(cfg.DenialsAt) != filepath.Dir(GitExcludePath) {
			add(Mount{Kind: Tmpfs, Target: filepath.Dir(GitExcludePath), Data: "mode=0755,size=64k,nr_inodes=64", Why: "stockade's files"})
		}
		add(Mount{Kind: File, Target: GitExcludePath, Data: cfg.GitExclude, Why: "placeholders git does not list"})
	}
	for _, m := range cfg.Services {
		add(m)
	}

	// The user's trees. Everything from here on lies in (or is reached
	// through) trees the sandbox can write, or the user named: the
	// executor resolves each path without following a symlink.
	if sc.Err != nil {
		return Plan{}, sc.Err
	}
	t := sc.Trees
	strict := func(m Mount) { m.Strict = true; add(m) }
	if cfg.HomeSource != "" {
		strict(Mount{Kind: Bind, Source: t.HomeSource, Target: cfg.Home, IsDir: true, Why: "sandbox HOME"})
		for _, rel := range cfg.HomeProtect {
			src := filepath.Join(t.HomeSource, rel)
			if realFile(host, t.HomeSource, src) {
				strict(Mount{Kind: Bind, Source: src, Target: filepath.Join(cfg.Home, rel), ReadOnly: true, Why: "agent guide"})
			}
		}
		if cfg.GitConfig != "" {
			strict(Mount{Kind: File, Target: filepath.Join(cfg.Home, ".gitconfig"), Data: cfg.GitConfig, Why: "--gitconfig"})
		}
	}
	for i, p := range cfg.RO {
		strict(Mount{Kind: Bind, Source: t.RO[i], Target: p, ReadOnly: true, IsDir: isDir(host, t.RO[i]), Why: "--ro"})
	}
	for i, p := range cfg.RW {
		strict(Mount{Kind: Bind, Source: t.RW[i], Target: p, IsDir: isDir(host, t.RW[i]), Why: "--rw"})
	}
	strict(Mount{Kind: Bind, Source: t.Workdir, Target: cfg.Workdir, IsDir: true, Why: "workdir"})

	if len(sc.Links) > 0 {
		return Plan{}, &LinkError{Paths: sc.Links}
	}
	// A mask hides everything below it; a protected path there is gone
	// from the view (and the mount would have no place to go).
	var maskedDirs []string
	masked := map[string]bool{}
	for _, f := range sc.Mask {
		masked[f.Path] = true
		if f.Dir {
			maskedDirs = append(maskedDirs, f.Path)
		}
	}
	hidden := func(p string) bool {
		for _, d := range maskedDirs {
			if p != d && within(p, d) {
				return true
			}
		}
		return false
	}
	// A protected or masked path is a mount point, so it cannot be
	// renamed, removed or replaced; its ancestors below the root are
	// pinned the same way (bound on themselves, still writable), so the
	// agent cannot rename the tree around it: put its own in place of a
	// protected one, or carry a masked secret into a directory the next
	// scan does not walk (node_modules) and read it in a later session.
	pinned := map[string]bool{}
	pin := func(f Found, why string) {
		if !f.Writable {
			return
		}
		for a, at := filepath.Dir(f.Path), filepath.Dir(f.Target); a != f.Root && within(a, f.Root); a, at = filepath.Dir(a), filepath.Dir(at) {
			if !pinned[a] && !masked[a] {
				pinned[a] = true
				strict(Mount{Kind: Bind, Source: a, Target: at, IsDir: true, Why: why})
			}
		}
	}
	// A --ro or --rw tree inside a writable one is a mount point too; its
	// parents are pinned, so that it cannot be renamed away and a symlink
	// put in its place (which the next start would refuse, but the exit
	// check of this one would not see).
	writableRoots := [][2]string{{t.Workdir, cfg.Workdir}}
	for i := range cfg.RW {
		writableRoots = append(writableRoots, [2]string{t.RW[i], cfg.RW[i]})
	}
	for _, list := range [][2][]string{{t.RO, cfg.RO}, {t.RW, cfg.RW}} {
		for i, src := range list[0] {
			for _, r := range writableRoots {
				if src != r[0] && within(src, r[0]) && list[1][i] == r[1]+strings.TrimPrefix(src, r[0]) {
					pin(Found{Path: src, Target: list[1][i], Root: r[0], Writable: true}, "pin parent of a --ro or --rw tree")
				}
			}
		}
	}
	for _, f := range sc.Mask {
		if !hidden(f.Path) {
			pin(f, "pin parent of masked path")
			strict(Mount{Kind: Empty, Target: f.Target, IsDir: f.Dir && !f.Link, Link: f.Link, Why: "mask", Held: f.Held})
		}
	}
	for _, f := range sc.Protect {
		if masked[f.Path] || pinned[f.Path] || hidden(f.Path) {
			continue // mask wins over protect
		}
		pin(f, "pin parent of protected path")
		pinned[f.Path] = true
		if f.Held {
			// The placeholder is empty (or "{}"): the same from the
			// sealed staging root, read-only, costs init half the
			// system calls of a bind of the host's.
			strict(Mount{Kind: Empty, Target: f.Target, IsDir: f.Dir, Data: placeholderContent(f.Path), Why: "placeholder of protected path", Held: true})
			continue
		}
		why := "protect"
		if f.Link {
			why = "protect symlink"
		}
		strict(Mount{Kind: Bind, Source: f.Path, Target: f.Target, ReadOnly: true, IsDir: f.Dir, Link: f.Link, Why: why})
	}
	sortMounts(ms)
	return Plan{Mounts: ms}, nil
}

// realFile reports whether p, below root, is a regular file reached
// without a symlink.
func realFile(host Host, root, p string) bool {
	for d := p; within(d, root) && d != root; d = filepath.Dir(d) {
		fi, err := host.Lstat(d)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 || (d == p && !fi.Mode().IsRegular()) {
			return false
		}
	}
	return true
}

// resolveBound follows symlinks at p, for at most 8 links, as they will
// resolve inside: through the host only while p lies in a tree the plan
// binds from the host as it is (the system dirs); elsewhere (a tmpfs such as
// /run) nothing exists until the plan makes it, and p is where it goes.
func resolveBound(host Host, p string, ms []Mount) string {
	for range 8 {
		bound := false
		for _, m := range ms {
			if m.Kind == Bind && m.Source == m.Target && m.Data != "sandbox" && within(p, m.Target) {
				bound = true
			}
		}
		if !bound {
			break
		}
		fi, err := host.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		link, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = filepath.Clean(link)
	}
	return p
}

// systemMasks are the patterns that exist, masked for why. The system
// trees are the host's, not the sandbox's: their paths are taken as they
// are.
func systemMasks(host Host, patterns []string, why string) []Mount {
	var out []Mount
	for _, pat := range patterns {
		dir, base := filepath.Split(pat)
		names := []string{base}
		if isGlob(base) {
			names = nil
			ents, _ := host.ReadDir(dir)
			for _, e := range ents {
				if ok, _ := filepath.Match(base, e.Name()); ok {
					names = append(names, e.Name())
				}
			}
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			if fi, err := host.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
				out = append(out, Mount{Kind: Empty, Target: p, IsDir: fi.IsDir(), Why: why})
			}
		}
	}
	return out
}

// tmpfsShares split Config.TmpfsSize between the writable tmpfs mounts, in
// eighths that add up to one: pages in a tmpfs belong to no process, so
// without size= each could take half of RAM out of the OOM killer's reach.
// Each mount is its own instance and cannot borrow another's room; /tmp,
// where builds and tests write, gets the most, /var/tmp (in /var) the
// next, and /run and /dev/shm an eighth each (64 MiB is Docker's /dev/shm).
var tmpfsShares = map[string]int64{"/tmp": 4, "/var": 2, "/run": 1, "/dev/shm": 1}

// tmpfsData is the option string of the writable tmpfs at target: its
// share of total bytes, and one inode per 4 KiB of it, since inodes
// (about 1 KiB of kernel memory each, even for an empty file) are not
// counted in size=.
func tmpfsData(mode, target string, total int64) string {
	if total <= 0 {
		return "mode=" + mode
	}
	// At least a page: size=0 would mean no limit at all.
	size := max(total/8*tmpfsShares[target], 4096)
	return fmt.Sprintf("mode=%s,size=%d,nr_inodes=%d", mode, size, size/4096)
}

func isDir(host Host, p string) bool {
	fi, err := host.Stat(p)
	return err == nil && fi.IsDir()
}
