//go:build linux

package mount

import (
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// Call is the system call a Step makes.
type Call uint8

const (
	CallMount   Call = iota + 1 // mount(Source, Path, FSType, Flags, Data)
	CallSetattr                 // mount_setattr(Path, Flags, Attr): add mount attributes
	CallMkdir                   // mkdir(Path, Mode)
	CallTouch                   // create Path as an empty file (O_NOFOLLOW) and close it
	CallWrite                   // create Path with Mode and content Data
	CallSymlink                 // symlink(Source, Path)
	CallChmod                   // chmod(Path, Mode)
	CallLstat                   // lstat(Path): only to test that it exists
	CallPivot                   // pivot_root(Path, Source)
	CallChdir                   // chdir(Path)
	CallUmount                  // umount2(Path, MNT_DETACH)
	// CallBindAt binds Source at Path the way a plan binds a tree the
	// sandbox can write: Source is opened with no symlink in any
	// component (openat2 RESOLVE_NO_SYMLINKS; a symlink as the last
	// component is taken itself), cloned (open_tree), given Attr
	// (mount_setattr) and moved onto Path, itself opened the same way.
	// Flags: AT_RECURSIVE for a recursive clone. Mode: the type Source
	// must have (S_IFDIR, S_IFLNK, or WantOther: neither; else ESTALE).
	// Check: see CheckSame, CheckOneLink.
	CallBindAt
	// CallMaskAt binds Source, a mask in the staging root, onto Path:
	// Source is cloned (open_tree) with the staging root's sealed
	// attributes, which a bind keeps (it takes no Attr), and moved onto
	// Path, opened as CallBindAt opens its target (no symlink in any
	// component; a symlink as the last component is covered itself).
	CallMaskAt
	// CallKeep creates Path with Mode, opened write-only (O_EXCL,
	// O_NOFOLLOW), and keeps the descriptor: init sends it to the
	// supervisor once the view is built (the Feed mount's file).
	CallKeep
	// CallKeepTree clones Source, a directory opened as CallBindAt opens
	// its source, gives the clone Attr and keeps the detached mount's
	// descriptor: init sends it to the supervisor once the view is built
	// (Plan.Store). Nothing is mounted.
	CallKeepTree
)

// WantOther is the Mode of a CallBindAt whose source is neither a directory
// nor a symlink (a file, as the plan saw it).
const WantOther = 1

// Checks a CallBindAt makes before it moves the mount.
const (
	// CheckSame: Path is Source itself, seen through an earlier bind
	// (a protected path bound onto itself): it is opened once, at Path,
	// and bound onto itself from there.
	CheckSame = 1 << iota
	// CheckOneLink: a regular file at Source has no other name (EMLINK):
	// another name in the workdir would be a writable way to it.
	CheckOneLink
)

var callNames = [...]string{
	CallMount: "mount", CallSetattr: "mount_setattr", CallMkdir: "mkdir", CallTouch: "open",
	CallWrite: "open", CallSymlink: "symlink", CallChmod: "chmod", CallLstat: "lstat",
	CallPivot: "pivot_root", CallChdir: "chdir", CallUmount: "umount2",
	CallBindAt: "open_tree/move_mount", CallMaskAt: "open_tree/move_mount", CallKeep: "open",
	CallKeepTree: "open_tree",
}

func (c Call) String() string { return callNames[c] }

// Step is one system call of the executor. Steps are plain data so that the
// sandbox's init, which runs them between clone and its first execve, needs
// no allocation and no Go runtime to carry them out (see package sandbox).
type Step struct {
	Call         Call
	Path, Source string
	FSType, Data string
	Flags        uintptr
	Attr         uint64 // CallSetattr, CallBindAt: attributes to set (not CallMaskAt: see sealed)
	Mode         uint32
	// Ok lists errnos (as bits: 1<<errno) that count as success, such as
	// EEXIST for a directory that is already there.
	Ok uint64
	// Skip is how many of the following steps a success skips: a mount
	// point that exists needs no creating, procfs with hidepid needs no
	// second try.
	Skip int
	// Strict: CallMkdir, CallTouch and CallLstat resolve the directory of
	// Path with no symlink in any component and act on its last component
	// there (never following it): the path lies below a tree the sandbox
	// can write.
	Strict bool
	Check  uint8 // CallBindAt: CheckSame, CheckOneLink
	// Dev and Ino, when Ino is not 0, are what CallKeepTree's Source must
	// be (else ESTALE).
	Dev, Ino uint64
	// Mount is the index in Plan.Mounts this step carries out, or -1 for
	// the steps around the plan, which What describes.
	Mount int
	What  string
}

// Errno bits for Step.Ok.
func okErr(errs ...unix.Errno) uint64 {
	var b uint64
	for _, e := range errs {
		b |= 1 << uint(e)
	}
	return b
}

// Steps turns plan into the system calls that build it in the caller's new
// mount namespace, staged under base, and pivot into it.
//
// The sequence follows bubblewrap's: a first pivot_root into a staging tmpfs
// keeps the host tree reachable as /oldroot while the new root is built at
// /newroot; a second pivot_root(".", ".") then makes /newroot the root and the
// staging tree is detached, and /oldroot with it: a lazy unmount takes the
// whole subtree, and each unmount waits for an expedited RCU grace period
// (namespace_unlock), so one detach costs the start one wait instead of
// bubblewrap's two. Nothing of the host is reachable afterwards except
// through the mounts of the plan. Read-only binds are made read-only
// recursively with mount_setattr(2), which a plain remount cannot do.
func Steps(plan Plan, base string) []Step {
	s := make([]Step, 0, 24+3*len(plan.Mounts))
	frame := func(what string, st Step) {
		st.Mount, st.What = -1, what
		s = append(s, st)
	}
	// Private first: nothing we mount may propagate back to the host.
	frame("making / private", Step{Call: CallMount, Path: "/", Flags: unix.MS_REC | unix.MS_PRIVATE})
	frame("mounting the staging tmpfs on "+base, Step{Call: CallMount, Source: "tmpfs", Path: base, FSType: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=0755"})
	frame("creating the staging dirs", Step{Call: CallMkdir, Path: base + "/oldroot", Mode: 0o755})
	frame("creating the staging dirs", Step{Call: CallMkdir, Path: base + "/newroot", Mode: 0o755})
	frame("creating the mask dir", Step{Call: CallMkdir, Path: base + "/empty-dir", Mode: 0o555})
	frame("creating the mask file", Step{Call: CallWrite, Path: base + "/empty-file", Mode: 0o444})
	frame("creating the placeholder file", Step{Call: CallWrite, Path: base + emptyJSON, Data: placeholderJSON, Mode: 0o444})
	for i, m := range plan.Mounts {
		switch m.Kind {
		case File:
			s = append(s, Step{Call: CallWrite, Path: base + fileAt(i), Data: m.Data, Mode: 0o444, Mount: i})
		case Feed:
			// A tmpfs of its own: the staging root is made read-only
			// below, which a descriptor open for writing on it would
			// forbid (EBUSY), and the supervisor's writes must not
			// fill a tmpfs the sandbox writes.
			s = append(s,
				Step{Call: CallMkdir, Path: base + feedDir, Mode: 0o700, Mount: i},
				Step{Call: CallMount, Source: "tmpfs", Path: base + feedDir, FSType: "tmpfs",
					Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, Data: feedTmpfs, Mount: i},
				Step{Call: CallKeep, Path: base + feedFile, Mode: 0o644, Mount: i})
		}
	}
	frame("pivoting into the staging root", Step{Call: CallPivot, Path: base, Source: base + "/oldroot"})
	frame("entering the staging root", Step{Call: CallChdir, Path: "/"})
	frame("mounting the new root", Step{Call: CallMount, Source: "tmpfs", Path: "/newroot", FSType: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=0755"})
	// A bind mount takes the flags of the mount it comes from: with the
	// staging root read-only, nosuid, nodev and noexec, so is every mask
	// and file bound from it, with no mount_setattr each.
	frame("making the staging root read-only", Step{Call: CallSetattr, Path: "/", Attr: sealed})
	if plan.Store != "" {
		frame("cloning the container engine's storage "+plan.Store, Step{Call: CallKeepTree, Source: "/oldroot" + plan.Store,
			Flags: unix.AT_RECURSIVE, Attr: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Mode: unix.S_IFDIR,
			Dev: plan.StoreDev, Ino: plan.StoreIno})
	}
	made := map[string]bool{"/newroot": true}
	for i, m := range plan.Mounts {
		cover, coverSelf := covering(plan.Mounts[:i], m)
		for _, st := range apply(m, i, made, cover, coverSelf) {
			st.Mount = i
			s = append(s, st)
		}
	}
	frame("making the new root read-only", Step{Call: CallSetattr, Path: "/newroot", Attr: unix.MOUNT_ATTR_RDONLY})
	frame("entering the new root", Step{Call: CallChdir, Path: "/newroot"})
	frame("pivoting into the new root", Step{Call: CallPivot, Path: ".", Source: "."})
	// The staging root is stacked on the new root now, with the host's
	// tree still mounted at its /oldroot (only init runs yet): the lazy
	// unmount detaches both, and the feed's tmpfs.
	frame("detaching the staging root and the host root", Step{Call: CallUmount, Path: "."})
	frame("entering the new root", Step{Call: CallChdir, Path: "/"})
	return s
}

const (
	emptyFile = "/empty-file"
	emptyDir  = "/empty-dir"
	emptyJSON = "/empty-json" // a .json placeholder's content
	// sealed are the attributes of the staging root once it is built, and
	// so of every mask: read-only, nosuid, nodev, noexec.
	sealed = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC
)

// The Feed mount's file is staged in a tmpfs of its own at feedDir (which
// the sandbox never sees: the staging root is detached with it, and only
// the descriptor the supervisor holds keeps it), bounded to well above what
// the file holds (denial.MaxLines lines).
const (
	feedDir   = "/feed"
	feedFile  = feedDir + "/file"
	feedTmpfs = "mode=0700,size=1m,nr_inodes=4"
)

// fileAt is where the content of the File mount i is staged.
func fileAt(i int) string { return fmt.Sprintf("/file-%d", i) }

// apply is the steps of one mount; made holds the directories earlier steps
// created, whose mkdir need not be tried again; cover is the target of the
// earlier bind m's target lies below, if any, and coverSelf whether that
// bind shows the host path at its own place (Source == Target).
func apply(m Mount, i int, made map[string]bool, cover string, coverSelf bool) []Step {
	dst := "/newroot" + m.Target
	src := "/oldroot" + m.Source
	if m.Data == "sandbox" {
		src = "/newroot" + m.Source
	}
	const nosuidNodev = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	switch m.Kind {
	case Bind:
		attr := uint64(nosuidNodev)
		if m.ReadOnly {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		if m.Strict {
			return bindStrict(m, src, dst, attr, made, cover, coverSelf)
		}
		return concat(ensure(dst, m.IsDir, made),
			Step{Call: CallMount, Source: src, Path: dst, Flags: unix.MS_BIND | unix.MS_REC},
			Step{Call: CallSetattr, Path: dst, Flags: unix.AT_RECURSIVE, Attr: attr})
	case Device:
		// /dev is a tmpfs of the plan: the node is made, never found.
		// The bind is read-only: a device node opens for writing on a
		// read-only mount all the same, but its inode (the host's) cannot
		// be chowned or chmodded through it. That matters where the
		// sandbox's ids reach a user namespace with capabilities: the
		// container engine's root, host uid 0 when the supervisor is root,
		// otherwise chowned the host's /dev/null from any container. A
		// child namespace cannot make the bind writable again (the flag
		// is locked there).
		return concat(mkdirAll(path.Dir(dst), made),
			Step{Call: CallTouch, Path: dst, Ok: okErr(unix.EEXIST)},
			Step{Call: CallMount, Source: src, Path: dst, Flags: unix.MS_BIND},
			Step{Call: CallSetattr, Path: dst, Attr: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC})
	case Tmpfs:
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
		if m.Target == "/dev" {
			flags = unix.MS_NOSUID | unix.MS_NOEXEC
		}
		return concat(ensure(dst, true, made), Step{Call: CallMount, Source: "tmpfs", Path: dst, FSType: "tmpfs", Flags: flags, Data: m.Data})
	case Proc:
		// hidepid hides what shares the sandbox's PID namespace but not
		// the command's Landlock domain: the container engine's processes.
		// ptraceable, not invisible: invisible exempts the group of the
		// mount's gid= (0 when unset, host gid 0), which root's sandbox
		// is in. Best effort: the PID namespace already hides the host.
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		return concat(ensure(dst, true, made),
			Step{Call: CallMount, Source: "proc", Path: dst, FSType: "proc", Flags: flags, Data: "hidepid=ptraceable", Ok: ^uint64(0), Skip: 1},
			Step{Call: CallMount, Source: "proc", Path: dst, FSType: "proc", Flags: flags})
	case Devpts:
		return concat(ensure(dst, true, made),
			Step{Call: CallMount, Source: "devpts", Path: dst, FSType: "devpts", Flags: unix.MS_NOSUID | unix.MS_NOEXEC, Data: "newinstance,ptmxmode=0666,mode=0620"})
	case Symlink:
		return concat(mkdirAll(path.Dir(dst), made), Step{Call: CallSymlink, Source: m.Source, Path: dst})
	case Dir:
		return concat(mkdirAll(dst, made), Step{Call: CallChmod, Path: dst, Mode: m.Mode & 0o7777})
	case File:
		if m.Strict && cover != "" {
			// In a tree the sandbox can write (the sandbox HOME): the
			// mount point is made, and the target opened, with no
			// symlink on the way; a symlink there is covered itself.
			return concat(ensureStrict(dst, false, "/newroot"+cover),
				Step{Call: CallMaskAt, Source: fileAt(i), Path: dst})
		}
		// The target was resolved through symlinks when the plan was made;
		// the file was written in the staging root (read-only now).
		return concat(ensure(dst, false, made),
			Step{Call: CallMount, Source: fileAt(i), Path: dst, Flags: unix.MS_BIND})
	case Feed:
		// In a tmpfs of the plan (the executor's own); the file in the
		// staging tmpfs stays writable, the bind is read-only.
		return concat(ensure(dst, false, made),
			Step{Call: CallMount, Source: feedFile, Path: dst, Flags: unix.MS_BIND},
			Step{Call: CallSetattr, Path: dst, Attr: sealed})
	case Empty:
		// The plan knows whether the masked path is a directory; an
		// optional one (a /proc file this kernel lacks) may be missing.
		src := emptyFile
		switch {
		case m.IsDir:
			src = emptyDir
		case m.Data == placeholderJSON:
			src = emptyJSON
		}
		if m.Strict {
			return []Step{{Call: CallMaskAt, Source: src, Path: dst}}
		}
		var ok uint64
		if m.Data == "optional" {
			ok = okErr(unix.ENOENT)
		}
		return []Step{{Call: CallMount, Source: src, Path: dst, Flags: unix.MS_BIND, Ok: ok}}
	}
	panic(fmt.Sprintf("mount: unknown kind %q in plan", m.Kind))
}

// bindStrict is the steps of a bind in a tree the sandbox can write or the
// user named (Mount.Strict).
func bindStrict(m Mount, src, dst string, attr uint64, made map[string]bool, cover string, coverSelf bool) []Step {
	bind := Step{Call: CallBindAt, Source: src, Path: dst, Flags: unix.AT_RECURSIVE, Attr: attr, Mode: WantOther}
	switch {
	case m.Link:
		bind.Mode = unix.S_IFLNK
	case m.IsDir:
		bind.Mode = unix.S_IFDIR
	}
	switch {
	case cover == "":
		// In the new root's own tmpfs, which nothing else writes.
		return concat(ensure(dst, m.IsDir, made), bind)
	case coverSelf && m.Source == m.Target && m.Data != "sandbox":
		// The target is the source itself, seen through an earlier bind
		// (a protected path in the workdir): it exists unless something
		// removed or replaced it meanwhile, and then the mount must fail,
		// not create anything on the host.
		bind.Check = CheckSame
		if m.ReadOnly && !m.IsDir && !m.Link {
			bind.Check |= CheckOneLink
		}
		return []Step{bind}
	default:
		// Below an earlier bind of a writable tree (a --ro tree in the
		// sandbox HOME): made there if missing, without following links.
		return concat(ensureStrict(dst, m.IsDir, "/newroot"+cover), bind)
	}
}

// covering is the target of the innermost earlier bind that m's target
// lies strictly below ("" if none), and whether that bind shows a host
// tree at its own path.
func covering(earlier []Mount, m Mount) (string, bool) {
	cover, self := "", false
	for _, e := range earlier {
		if e.Kind == Bind && e.Target != m.Target && within(m.Target, e.Target) && len(e.Target) > len(cover) {
			cover, self = e.Target, e.Source == e.Target && e.Data != "sandbox"
		}
	}
	return cover, self
}

// ensureStrict makes the mount point p below cover, resolving each
// component with no symlink: the directories are a tree the sandbox can
// write.
func ensureStrict(p string, dir bool, cover string) []Step {
	var dirs []string
	last := p
	if !dir {
		last = path.Dir(p)
	}
	for d := last; d != cover && within(d, cover); d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	var s []Step
	for _, d := range dirs {
		s = append(s, Step{Call: CallMkdir, Path: d, Mode: 0o755, Ok: okErr(unix.EEXIST), Strict: true})
	}
	if !dir {
		s = append(s, Step{Call: CallTouch, Path: p, Ok: okErr(unix.EEXIST), Strict: true})
	}
	return s
}

// ensure makes a mount point: a directory, or an empty file unless
// something is there already.
func ensure(p string, dir bool, made map[string]bool) []Step {
	if dir {
		return mkdirAll(p, made)
	}
	parents := mkdirAll(path.Dir(p), made)
	return concat([]Step{{Call: CallLstat, Path: p, Ok: okErr(unix.ENOENT), Skip: len(parents) + 1}},
		concat(parents, Step{Call: CallTouch, Path: p, Ok: okErr(unix.EISDIR, unix.ELOOP)})...)
}

// mkdirAll creates p and its missing parents below /newroot.
func mkdirAll(p string, made map[string]bool) []Step {
	if made[p] || p == "/" || p == "." {
		return nil
	}
	s := mkdirAll(path.Dir(p), made)
	made[p] = true
	return append(s, Step{Call: CallMkdir, Path: p, Mode: 0o755, Ok: okErr(unix.EEXIST)})
}

func concat(a []Step, b ...Step) []Step { return append(a, b...) }
