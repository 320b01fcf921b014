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
}

// OS is the real host filesystem.
type OS struct{}

func (OS) Lstat(p string) (fs.FileInfo, error)     { return os.Lstat(p) }
func (OS) Stat(p string) (fs.FileInfo, error)      { return os.Stat(p) }
func (OS) ReadDir(p string) ([]fs.DirEntry, error) { return os.ReadDir(p) }

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
	// HomeProtect are paths relative to the sandbox HOME kept read-only
	// inside (the agent's guide), when they exist.
	HomeProtect []string
	// TmpfsSize is how many bytes the writable tmpfs mounts may hold
	// together (see tmpfsShares); 0 leaves each at the kernel's default,
	// half of RAM and as many inodes.
	TmpfsSize int64
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

// Build makes the mount plan for cfg.
func Build(cfg Config, host Host) (Plan, error) {
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
	for _, p := range expand(host, "/", SystemMasks) {
		ms = append(ms, maskOf(p.path, p.dir, "system secret"))
	}

	if cfg.ResolvConf != "" {
		// /etc/resolv.conf is often a symlink into /run: the file goes
		// where the link leads inside.
		add(Mount{Kind: File, Target: resolveBound(host, "/etc/resolv.conf", ms), Data: cfg.ResolvConf, Why: "DNS through the stub"})
	}

	// Kernel interfaces.
	add(Mount{Kind: Tmpfs, Target: "/dev", Data: "mode=0755,size=64k,nr_inodes=1024", Why: "devices"})
	for _, d := range Devices {
		add(Mount{Kind: Device, Source: "/dev/" + d, Target: "/dev/" + d, Why: "devices"})
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

	// The user's trees.
	if cfg.HomeSource != "" {
		add(Mount{Kind: Bind, Source: cfg.HomeSource, Target: cfg.Home, IsDir: true, Why: "sandbox HOME"})
		for _, rel := range cfg.HomeProtect {
			src := filepath.Join(cfg.HomeSource, rel)
			if fi, err := host.Lstat(src); err == nil && fi.Mode().IsRegular() {
				add(Mount{Kind: Bind, Source: src, Target: filepath.Join(cfg.Home, rel), ReadOnly: true, Why: "agent guide"})
			}
		}
	}
	for _, p := range cfg.RO {
		add(Mount{Kind: Bind, Source: p, Target: p, ReadOnly: true, IsDir: isDir(host, p), Why: "--ro"})
	}
	for _, p := range cfg.RW {
		add(Mount{Kind: Bind, Source: p, Target: p, IsDir: isDir(host, p), Why: "--rw"})
	}
	add(Mount{Kind: Bind, Source: cfg.Workdir, Target: cfg.Workdir, IsDir: true, Why: "workdir"})

	writable := append([]string{cfg.Workdir}, cfg.RW...)
	masked := map[string]bool{}
	for _, root := range append(writable, cfg.RO...) {
		unmasked := map[string]bool{}
		for _, p := range expand(host, root, cfg.Unmask) {
			unmasked[p.path] = true
		}
		for _, p := range expand(host, root, cfg.Mask) {
			if !masked[p.path] && !unmasked[p.path] {
				masked[p.path] = true
				ms = append(ms, maskOf(p.path, p.dir, "mask"))
			}
		}
	}
	pinned := map[string]bool{}
	for _, root := range writable {
		for _, p := range expand(host, root, cfg.Protect) {
			if masked[p.path] || pinned[p.path] {
				continue // mask wins over protect
			}
			// A protected path is a mount point, so it cannot be renamed,
			// removed or replaced; its ancestors below the root are pinned
			// the same way (bound on themselves, still writable), so the
			// agent cannot rename the tree around it and put its own in place.
			for a := filepath.Dir(p.path); a != root && within(a, root); a = filepath.Dir(a) {
				if !pinned[a] {
					pinned[a] = true
					ms = append(ms, Mount{Kind: Bind, Source: a, Target: a, IsDir: true, Why: "pin parent of protected path"})
				}
			}
			pinned[p.path] = true
			ms = append(ms, Mount{Kind: Bind, Source: p.path, Target: p.path, ReadOnly: true, IsDir: p.dir, Why: "protect"})
		}
	}
	sortMounts(ms)
	return Plan{Mounts: ms}, nil
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

func maskOf(p string, dir bool, why string) Mount {
	return Mount{Kind: Empty, Target: p, IsDir: dir, Why: why}
}

func isDir(host Host, p string) bool {
	fi, err := host.Stat(p)
	return err == nil && fi.IsDir()
}

type found struct {
	path string
	dir  bool
}

// expand resolves patterns against root: "name", "sub/name", "name.*" (a glob
// in the last element) or an absolute path. Only paths that exist are
// returned, and never a symlink: a symlink planted by the agent must not turn
// a mask or a protection into a bind of some other file.
func expand(host Host, root string, patterns []string) []found {
	var out []found
	for _, pat := range patterns {
		pat = strings.TrimSuffix(pat, "/")
		full := pat
		if !filepath.IsAbs(pat) {
			full = filepath.Join(root, pat)
		}
		// Policy refuses ".." in patterns; this holds even if it did not.
		if !within(full, root) {
			continue
		}
		dir, base := filepath.Split(full)
		dir = filepath.Clean(dir)
		var names []string
		if strings.ContainsAny(base, "*?[") {
			ents, err := host.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if ok, _ := filepath.Match(base, e.Name()); ok {
					names = append(names, e.Name())
				}
			}
		} else {
			names = []string{base}
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			fi, err := host.Lstat(p)
			if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
				continue
			}
			out = append(out, found{path: p, dir: fi.IsDir()})
		}
	}
	return out
}
